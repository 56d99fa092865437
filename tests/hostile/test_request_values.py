"""Values in a request file that must be refused before anything is built or sent, on every route.

A 5 001-digit ``seed`` used to be a ValueError from inside the JSON decoder, and a tool schema's
``$ref`` to ``http://`` or ``file://`` (or to nothing at all) went to the provider as declared on
every passthrough route. Each case here runs ``capplan preview`` and ``capplan send`` on a Claude,
a Kimi (OpenRouter), the mock and an OpenAI plan, with ``send`` pointed at a loopback server:
exit 2, one located line naming the field, no traceback, no credential echoed, nothing sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from capplan.executor.messages import MAX_REQUEST_TOKENS, SEED_MAX
from tests.fake_provider import FakeProvider, unscripted
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]
PLANS = ["claude-opus-4.7", "kimi-k3", "mock-echo", "gpt-4o"]
CANARY = "sk-canary-7f3a9c1e0d2b4a68"
#: every key variable these plans' routes read, set to the canary, and the gateway variables
#: cleared so the call would go straight to --api-base
ENV: dict[str, str | None] = {
    "ANTHROPIC_API_KEY": CANARY,
    "OPENAI_API_KEY": CANARY,
    "OPENROUTER_API_KEY": CANARY,
    "OPENROUTER_API_KEYS": None,
    "OPENROUTER_KEY_FILE": None,
    "LLM_PROXY_BASE_URL": None,
    "LLM_PROXY_API_KEY": None,
    "LLM_PROXY_HEADERS": None,
    "LLM_PROXY_PROVIDERS": None,
    "LLM_PROXY_PREFERRED_ROUTE": None,
}
HI = [{"role": "user", "content": "hi"}]


def tool(parameters: dict[str, Any], name: str = "lookup") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def ref_to(ref: str, **defs: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"type": "object", "properties": {"q": {"$ref": ref}}}
    if defs:
        params["$defs"] = defs
    return {"messages": HI, "tools": [tool(params)]}


#: where a number json.dumps cannot write (1e400, 5 001 digits) goes in a request object
NUMBER = "@number@"


def with_number(request: dict[str, Any], literal: str) -> str:
    """The request's JSON text with the ``NUMBER`` placeholder replaced by ``literal`` as written."""
    return json.dumps(request, indent=2).replace(json.dumps(NUMBER), literal)


def setting(field: str, literal: str) -> str:
    return with_number({"messages": HI, field: NUMBER}, literal)


# (request text or object, the field the error names, a fragment of the message)
CASES: dict[str, tuple[str | dict[str, Any], str, str]] = {
    "seed-5001-digits": (setting("seed", "9" * 5001), "seed", "a number of 5001 characters; the limit is 100"),
    "seed-1e400": (setting("seed", "1e400"), "seed", "too large for a 64-bit float"),
    "seed-past-int64": (setting("seed", str(SEED_MAX + 1)), "seed", f"less than or equal to {SEED_MAX}"),
    "seed-quoted": ({"messages": HI, "seed": "7"}, "seed", "valid integer"),
    "max-tokens-huge": (setting("max_tokens", "1" + "0" * 30), "max_tokens", f"less than or equal to {MAX_REQUEST_TOKENS}"),
    "max-tokens-1e400": (setting("max_tokens", "1e400"), "max_tokens", "too large for a 64-bit float"),
    "temperature-1e400": (setting("temperature", "1e400"), "temperature", "too large for a 64-bit float"),
    "temperature-quoted": ({"messages": HI, "temperature": "0.5"}, "temperature", "valid number"),
    "top-p-true": ({"messages": HI, "top_p": True}, "top_p", "valid number"),
    "budget-huge": ({"messages": HI, "reasoning": {"mode": "budget", "budget_tokens": 10**30}},
                    "reasoning.budget_tokens", f"less than or equal to {MAX_REQUEST_TOKENS}"),
    "parallel-tool-calls-quoted": ({"messages": HI, "tools": [tool({"type": "object"})], "parallel_tool_calls": "yes"},
                                   "parallel_tool_calls", "valid boolean"),
    "schema-number-1e400": (with_number({"messages": HI, "tools": [tool({"type": "object", "properties": {"n": {"maximum": NUMBER}}})]}, "1e400"),
                            "tools.0.function.parameters.properties.n.maximum", "too large for a 64-bit float"),
    "ref-dangling": (ref_to("#/$defs/Nope", Other={"type": "string"}), "tools.0.function.parameters.properties.q.$ref",
                     "tool 'lookup': /properties/q/$ref: $ref '#/$defs/Nope' names nothing in the tool's schema"),
    "ref-http": (ref_to("http://evil.example/x.json"), "tools.0.function.parameters.properties.q.$ref",
                 "tool 'lookup': /properties/q/$ref: $ref is a URL (http:) outside the tool's schema"),
    "ref-file": (ref_to("file:///etc/passwd"), "tools.0.function.parameters.properties.q.$ref",
                 "tool 'lookup': /properties/q/$ref: $ref is a URL (file:) outside the tool's schema"),
    "ref-relative": (ref_to("defs.json#/Node"), "tools.0.function.parameters.properties.q.$ref", "a relative reference"),
    "ref-into-data": (ref_to("#/$defs/A/default", A={"type": "object", "default": {"type": "string"}}),
                      "tools.0.function.parameters.properties.q.$ref", "points into 'default', which holds data"),
    "ref-cycle": (ref_to("#/$defs/A", A={"$ref": "#/$defs/B"}, B={"allOf": [{"$ref": "#/$defs/A"}]}),
                  "tools.0.function.parameters.$defs.B.allOf.0.$ref",
                  "$ref cycle #/$defs/A -> #/$defs/B -> #/$defs/B/allOf/0 -> #/$defs/A evaluates the same value forever"),
    "ref-self": (ref_to("#/$defs/A", A={"$ref": "#/$defs/A"}), "tools.0.function.parameters.$defs.A.$ref",
                 "$ref cycle #/$defs/A -> #/$defs/A"),
    "dynamic-ref-https": ({"messages": HI, "tools": [tool({"type": "object", "properties": {"q": {"$dynamicRef": "https://evil.example/m"}}})]},
                          "tools.0.function.parameters.properties.q.$dynamicRef", "$dynamicRef is a URL (https:)"),
    "recursive-ref-file": ({"messages": HI, "tools": [tool({"type": "object", "properties": {"q": {"$recursiveRef": "file:///etc/shadow"}}})]},
                           "tools.0.function.parameters.properties.q.$recursiveRef", "$recursiveRef is a URL (file:)"),
    "arguments-5001-digits": ({"messages": [*HI, {"role": "assistant", "tool_calls": [
        {"id": "c1", "function": {"name": "lookup", "arguments": '{"q": ' + "9" * 5001 + "}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}], "tools": [tool({"type": "object"})]},
        "messages.1.tool_calls.0.function.arguments", "arguments are not strict JSON (q: a number of 5001 characters"),
    "nested-id": ({"messages": HI, "tools": [tool({"type": "object", "$defs": {"A": {"type": "string"}},
                                                    "properties": {"q": {"$id": "https://evil.example/s.json", "$ref": "#/$defs/A"}}})]},
                  "tools.0.function.parameters.properties.q.$id", "a nested $id"),
}


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    with FakeProvider(unscripted) as srv:
        yield srv


def run(command: str, plan: str, request: Path, server: FakeProvider) -> Result:
    args = [command, "--plan", str(REPO / "golden" / "plans" / f"{plan}.json")]
    if command == "send":
        args += ["--api-base", server.root]
    result = invoke(*args, str(request), env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert CANARY not in result.output
    return result


def expected_position(text: str, field: str) -> tuple[int, int]:
    """Line and column of the last key of ``field`` (its first occurrence after the earlier keys)."""
    pos = 0
    for part in field.split("."):
        if part.isdigit():
            continue
        pos = text.index(json.dumps(part), pos)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def number_position(text: str, literal: str) -> tuple[int, int]:
    pos = text.index(": " + literal) + 2
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("command", ["preview", "send"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_value_is_one_located_line_and_nothing_is_sent(
    tmp_path: Path, server: FakeProvider, plan: str, command: str, case: str
) -> None:
    request, field, message = CASES[case]
    text = request if isinstance(request, str) else json.dumps(request, indent=2)
    path = tmp_path / "request.json"
    path.write_text(text, encoding="utf-8")

    result = run(command, plan, path, server)

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    where, rest = line.split(": error[REQUEST]: ", 1)
    assert rest.startswith(f"{field}: ") and message in rest, line
    file, line_no, col = where.rsplit(":", 2)
    assert file == str(path)
    # a number the file's decoder refuses is located at the number; anything else, at its key
    literal = next((n for n in ("1e400", "9" * 5001) if ": " + n in text), None)
    if literal is not None and not message.startswith("arguments"):
        assert (int(line_no), int(col)) == number_position(text, literal), line
    else:
        assert (int(line_no), int(col)) == expected_position(text, field), line
    assert server.requests == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["request.json"]


@pytest.mark.parametrize("plan", ["claude-opus-4.7", "kimi-k3", "gpt-4o"])
def test_the_same_server_receives_a_sound_request(tmp_path: Path, server: FakeProvider, plan: str) -> None:
    # the control: the routes above do send to --api-base, so an empty record means refused
    server.queue({"error": {"message": "refused by the test", "type": "invalid_request_error"}}, status=400)
    path = tmp_path / "request.json"
    recursive = ref_to("#/$defs/Node", Node={"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}})
    path.write_text(json.dumps({**recursive, "seed": 7, "max_tokens": 64}), encoding="utf-8")
    result = run("send", plan, path, server)
    assert result.exit_code == 1, result.output
    assert len(server.requests) >= 1


@pytest.mark.parametrize("plan", PLANS)
def test_local_refs_and_recursion_through_items_still_build(tmp_path: Path, server: FakeProvider, plan: str) -> None:
    params = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"name": {"type": "string"},
                                                             "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
                  "a/b": {"type": "string"}},
        "properties": {"root": {"$ref": "#/$defs/Node"}, "slashed": {"$ref": "#/$defs/a~1b"},
                       "same": {"$ref": "#/properties/root"}, "data": {"default": {"$ref": "http://not-a-ref"}}},
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"messages": HI, "tools": [tool(params)], "seed": SEED_MAX, "max_tokens": 1024}), encoding="utf-8")
    result = run("preview", plan, path, server)
    assert result.exit_code == 0, result.output
    sent = json.loads(result.stdout)
    assert "Nope" not in result.stdout and sent["model"]


def test_a_long_ref_cycle_is_found_without_recursion(tmp_path: Path, server: FakeProvider) -> None:
    # refs chain through flat $defs, so the nesting limit does not bound them: the search is iterative
    steps = 2000  # past the interpreter's recursion limit
    defs = {f"c{i}": {"$ref": f"#/$defs/c{(i + 1) % steps}"} for i in range(steps)}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(ref_to("#/$defs/c0", **defs)), encoding="utf-8")
    result = run("preview", "gpt-4o", path, server)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "error[REQUEST]: tools.0.function.parameters.$defs.c1999.$ref: " in line and "$ref cycle #/$defs/c0 -> #/$defs/c1 -> #/$defs/c2 -> #/$defs/c3 -> … -> #/$defs/c1997 -> #/$defs/c1998 -> #/$defs/c1999 -> #/$defs/c0 " in line


def test_every_ref_problem_of_a_file_is_reported_in_one_pass(tmp_path: Path, server: FakeProvider) -> None:
    params = {"type": "object", "properties": {"a": {"$ref": "http://evil.example/a"}, "b": {"$ref": "#/$defs/Nope"}}}
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"messages": HI, "tools": [tool(params), tool(params, "other")]}, indent=2), encoding="utf-8")
    result = run("preview", "mock-echo", path, server)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 4 and all(": error[REQUEST]: tools." in line for line in lines), lines
    assert sum("tool 'other'" in line for line in lines) == 2


def test_a_caller_building_requests_in_python_is_held_to_the_same_rule() -> None:
    # a trial hands the client plain dicts every turn: the rule is the request model's, not the file reader's
    from pydantic import ValidationError

    from capplan.executor.messages import ChatRequest

    with pytest.raises(ValidationError, match=r"tool 'lookup': /properties/q/\$ref: \$ref is a URL \(file:\)"):
        ChatRequest.model_validate(ref_to("file:///etc/passwd"))
    clean = ref_to("#/$defs/Node", Node={"type": "string"})
    assert ChatRequest.model_validate(clean) == ChatRequest.model_validate(clean)  # a remembered verdict, same answer
