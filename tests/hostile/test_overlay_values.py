"""Values an overlay (or providers / pricing file) may not hold: each a located error, exit 2, nothing written.

Tagged scalars where a list belongs, numbers past their bounds or not finite, header values with
line breaks, endpoints that are not http(s) URLs with a host. A value that could be a secret
(a password in an endpoint, a header value) is never repeated in the output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from tests.cli_runner import invoke_checked

CANARY = "Canary-Pw-7f3a9c"


def run(*args: str) -> Result:
    return invoke_checked(*args)


def preset(field: str) -> str:
    """An overlay whose one preset sets ``field`` (a YAML fragment at line 4)."""
    return f"presets:\n  fz:\n    match: ['fz/*']\n    {field}\n"


#: (overlay text, line of the problem, error code)
BAD_OVERLAYS: dict[str, tuple[str, int, str]] = {
    "tagged-str-match": ("presets:\n  fz:\n    match: !!str \"fz/*\"\n", 3, "wrong-type"),
    "tagged-str-match-provider": ("presets:\n  fz:\n    match: ['fz/*']\n    match_provider: !!str \"fz\"\n", 4,
                                  "wrong-type"),
    "plain-str-match": ("presets:\n  fz:\n    match: \"fz/*\"\n", 3, "wrong-type"),
    "custom-tag-match": ("presets:\n  fz:\n    match: !glob \"fz/*\"\n", 3, "unsupported-tag"),
    "custom-tag-list": ("presets:\n  fz:\n    match: !globs ['fz/*']\n", 3, "unsupported-tag"),
    "set-match": ("presets:\n  fz:\n    match: !!set {fz/a, fz/b}\n", 3, "unsupported-tag"),
    "binary-glob": ("presets:\n  fz:\n    match: [!!binary ZnovKg==]\n", 3, "unsupported-tag"),
    "tagged-str-upstreams": (preset("openrouter_defaults: {provider_order: !!str \"abc\"}"), 4, "wrong-type"),
    "context-10^60": (preset("max_context_tokens: 1" + "0" * 60), 4, "wrong-type"),
    "watermark-10^60": (preset("context_watermark: 1" + "0" * 60), 4, "wrong-type"),
    "turns-10^12": (preset("default_max_turns: 1000000000000"), 4, "wrong-type"),
    "turns-zero": (preset("default_max_turns: 0"), 4, "wrong-type"),
    "tool-output-10^12": (preset("tool_output_max_chars: 1000000000000"), 4, "wrong-type"),
    "retries-10^6": (preset("empty_retry_count: 1000000"), 4, "wrong-type"),
    "parser-retries-negative": (preset("parser_error_retry_count: -1"), 4, "wrong-type"),
    "timeout-inf": (preset("api_call_timeout_s: .inf"), 4, "wrong-type"),
    "timeout-1e400": (preset("api_call_timeout_s: 1e400"), 4, "wrong-type"),
    "timeout-a-year": (preset("api_call_timeout_s: 31536000"), 4, "wrong-type"),
    "timeout-nan": (preset("api_call_timeout_s: .nan"), 4, "wrong-type"),
    "timeout-string": (preset("api_call_timeout_s: '120'"), 4, "wrong-type"),
    "budget-10^60": (preset("params: {reasoning_budget_default: 1" + "0" * 60 + "}"), 4, "wrong-type"),
    "temperature-100": (preset("params: {fixed_temperature: 100}"), 4, "wrong-type"),
    "seed-flag-yes": (preset("params: {supports_seed: 'yes'}"), 4, "wrong-type"),
    "referer-crlf": (preset(f"openrouter_defaults: {{referer: \"https://a.example\\r\\nX-Leak: {CANARY}\"}}"), 4,
                     "wrong-type"),
    "title-escape": (preset(f"openrouter_defaults: {{title: \"\\e[31m{CANARY}\"}}"), 4, "wrong-type"),
    "title-too-long": (preset("openrouter_defaults: {title: '" + "t" * 5000 + "'}"), 4, "wrong-type"),
}


def binding(endpoint: str) -> str:
    return f"bindings:\n  acme:\n    endpoint: {json.dumps(endpoint)}\n    api_key_env: ACME_API_KEY\n"


BAD_ENDPOINTS = {
    "file-url": "file:///etc/passwd",
    "not-a-url": "not-a-url",
    "ftp": "ftp://files.example.com/v1",
    "no-host": "http:///v1",
    "userinfo": f"http://user:{CANARY}@llm.example.com/v1",
    "bad-ipv6": "http://[::1/v1",
    "port-99999": "http://llm.example.com:99999/v1",
    "space": "http://llm.example.com/v1 extra",
    "newline": "http://llm.example.com/v1\nX-Evil: 1",
    "nul": "http://llm.example.com/\u0000v1",
    "huge": "https://llm.example.com/" + "a" * 5000,
}


def assert_refused(tmp_path: Path, path: Path, line: int, code: str, *, compile_too: bool = True) -> None:
    result = run("lint", "--kind", "overlay", str(path))
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and f"error[{code}]" in result.output, result.output
    assert CANARY not in result.output
    if not compile_too:
        return
    out = tmp_path / "plans"
    result = run("compile", "--presets-file", str(path), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and f"error[{code}]" in result.output
    assert CANARY not in result.output
    assert not out.exists(), "nothing may be written when an input is refused"


@pytest.mark.parametrize("name", sorted(BAD_OVERLAYS))
def test_a_bad_overlay_value_is_a_located_error_and_nothing_is_written(tmp_path: Path, name: str) -> None:
    text, line, code = BAD_OVERLAYS[name]
    path = tmp_path / "overlay.yaml"
    path.write_text(text, encoding="utf-8")
    assert_refused(tmp_path, path, line, code)


@pytest.mark.parametrize("name", sorted(BAD_ENDPOINTS))
def test_an_endpoint_that_is_not_an_http_url_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "overlay.yaml"
    path.write_text(binding(BAD_ENDPOINTS[name]), encoding="utf-8")
    result = run("lint", str(path))
    assert result.exit_code == 2, result.output
    assert f"{path}:3:5: error[" in result.output and "endpoint" in result.output
    assert CANARY not in result.output and "passwd" not in result.output
    out = tmp_path / "plans"
    result = run("compile", "--presets-file", str(path), "--out", str(out))
    assert result.exit_code == 2 and f"{path}:3:5:" in result.output
    assert not out.exists()


def test_the_tagged_scalar_no_longer_moves_every_model(tmp_path: Path) -> None:
    """The original report: `!!str "fz/*"` became the globs f, z, /, * and `*` took all models."""
    path = tmp_path / "overlay.yaml"
    path.write_text(BAD_OVERLAYS["tagged-str-match"][0], encoding="utf-8")
    result = run("compile", "--presets-file", str(path), "--out", str(tmp_path / "plans"))
    assert result.exit_code == 2
    assert "hides-bundled-presets" not in result.output
    assert "must be a list, not a single string" in result.output


def test_a_providers_file_endpoint_is_checked_too(tmp_path: Path) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text(f"acme:\n  endpoint: \"http://u:{CANARY}@h.example/v1\"\n  api_key_env: ACME_API_KEY\n")
    result = run("lint", str(path))
    assert result.exit_code == 2 and f"{path}:2:3: error[bad-url]" in result.output
    assert CANARY not in result.output


@pytest.mark.parametrize("price, line", [('"input": 1e12', 1), ('"cache_read": -1', 1), ('"output": "lots"', 1)])
def test_pricing_values_are_bounded(tmp_path: Path, price: str, line: int) -> None:
    path = tmp_path / "pricing.json"
    body = {"input": 1.0, "output": 2.0}
    text = json.dumps({"models": {"acme/m": body}})
    key = price.split(":")[0].strip('"')
    text = text.replace(f'"{key}": {body.get(key, 0.0)}', price) if key in body else text.replace(
        '"output": 2.0', '"output": 2.0, ' + price)
    path.write_text(text)
    result = run("lint", "--kind", "pricing", str(path))
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and "error[wrong-type]" in result.output


def test_values_at_their_bounds_and_plain_tags_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "overlay.yaml"
    path.write_text(
        "presets:\n  fz:\n    match: [!!str 'fz/*']\n    max_context_tokens: 100000000\n    default_max_turns: 10000\n"
        "    empty_retry_count: 100\n    api_call_timeout_s: 86400\n"
        "    openrouter_defaults: {title: !!str 'Acme Evals', referer: 'https://acme.example'}\n"
        "bindings:\n  acme:\n    endpoint: 'https://[::1]:8443/v1'\n    api_key_env: ACME_API_KEY\n", encoding="utf-8")
    result = run("lint", str(path))
    assert result.exit_code in (0, 1), result.output  # warnings (e.g. an unused binding) are fine
    assert "error[" not in result.output
