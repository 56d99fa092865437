"""The direct entry-point reader agrees with importlib.metadata, and third-party policies still arrive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from importlib.machinery import PathFinder
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from capplan.executor import entry_point_scan
from capplan.executor.entry_point_scan import GROUPS, POLICY_GROUP, _scan, scan, skip_pydantic_plugin_scan
from capplan.executor.registry import RegistryError, policy_targets

REPO = Path(__file__).resolve().parents[2]


def _standard_find_distributions(*args: object, **kwargs: object) -> object:
    from importlib.metadata import MetadataPathFinder

    return MetadataPathFinder.find_distributions(*args, **kwargs)  # type: ignore[arg-type]


def _dist(site: Path, folder: str, name: str, entry_points_txt: str | None) -> Path:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    if entry_points_txt is not None:
        (info / "entry_points.txt").write_text(entry_points_txt, encoding="utf-8")
    return info


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder of distributions first on sys.path; the registry is rebuilt around the test."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    # importlib_metadata (the backport, which litellm imports) swaps the standard finder for its
    # own; a CLI start-up has the standard one, restored here (the reader steps aside otherwise,
    # tested below)
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path
                                           if getattr(f, "find_distributions", None) is None or f is PathFinder])
    if getattr(PathFinder, "find_distributions", None) is None:
        monkeypatch.setattr(PathFinder, "find_distributions", staticmethod(_standard_find_distributions),
                            raising=False)
    policy_targets.cache_clear()
    yield folder
    policy_targets.cache_clear()


def _as_tuples(eps: object) -> list[tuple[str, str, str, str]]:
    out = []
    for ep in eps:  # type: ignore[attr-defined]
        folder = str(ep.dist_folder) if hasattr(ep, "dist_folder") else str(ep.dist._path)
        out.append((ep.name, ep.value, ep.group, folder))
    return out


def test_every_group_of_this_environment_reads_as_importlib_metadata_reads_it() -> None:
    groups = tuple(sorted(entry_points().groups))
    found = _scan(groups)
    assert found is not None
    for group in groups:
        assert _as_tuples(found[group]) == _as_tuples(entry_points(group=group)), group


def test_first_distribution_of_a_name_wins_and_file_syntax_matches(site: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(site, "acme_policies-2.0.dist-info", "acme-policies",
          "# a comment\n\n[capplan.policies]\n  response_policy.acme =  acme.mod:Acme  \n"
          "[console_scripts]\nacme = acme.cli:main\n")
    later = tmp_path / "later"
    later.mkdir()
    _dist(later, "Acme.Policies-1.0.dist-info", "Acme.Policies",
          "[capplan.policies]\nresponse_policy.shadowed = acme.old:Old\n")
    monkeypatch.syspath_prepend(str(site))  # keep `site` first
    monkeypatch.setattr(sys, "path", [*sys.path, str(later)])
    found = _scan((POLICY_GROUP, "console_scripts"))
    assert found is not None
    assert _as_tuples(found[POLICY_GROUP]) == _as_tuples(entry_points(group=POLICY_GROUP))
    assert _as_tuples(found["console_scripts"]) == _as_tuples(entry_points(group="console_scripts"))
    assert policy_targets()["response_policy"]["acme"] == "acme.mod:Acme"
    assert "shadowed" not in policy_targets()["response_policy"]


def test_a_third_party_duplicate_is_reported_with_its_distribution_name(site: Path) -> None:
    _dist(site, "thirdparty-0.3.dist-info", "ThirdParty",
          "[capplan.policies]\nschema_sanitizer.strict = thirdparty:Strict\nsanitiser.typo = thirdparty:T\n")
    with pytest.raises(RegistryError) as info:
        policy_targets()
    assert str(info.value) == (
        "policy registry cannot be built:\n"
        "  ThirdParty (capplan.policies): duplicate policy name schema_sanitizer.strict "
        "(already registered as capplan.executor.policies.strict_schema:StrictSchema)\n"
        "  ThirdParty (capplan.policies): entry point 'sanitiser.typo' names unknown slot 'sanitiser'; "
        "valid slots: schema_sanitizer, prompt_policy, content_policy, params_policy, response_policy, "
        "reasoning_codec, cache_policy, message_assembly_policy, assistant_text_policy")


def test_a_distribution_installed_after_a_scan_is_seen(site: Path) -> None:
    assert scan() is not None
    before = policy_targets()
    assert "late" not in before["prompt_policy"]
    _dist(site, "late-1.0.dist-info", "late", "[capplan.policies]\nprompt_policy.late = late:Late\n")
    policy_targets.cache_clear()
    assert policy_targets()["prompt_policy"]["late"] == "late:Late"


@pytest.mark.parametrize("case", ["zip on sys.path", "malformed line", "not utf-8", "another finder"])
def test_where_the_reader_cannot_follow_importlib_metadata_answers(site: Path, tmp_path: Path, case: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if case == "zip on sys.path":
        archive = tmp_path / "dists.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
            zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[capplan.policies]\nprompt_policy.zipped = z:Z\n")
        monkeypatch.syspath_prepend(str(archive))
    elif case == "malformed line":
        _dist(site, "broken-1.0.dist-info", "broken", "[other.group]\nno equals sign here\n")
    elif case == "another finder":
        class Finder:
            @staticmethod
            def find_distributions(*args: object, **kwargs: object) -> list[object]:
                return []

        monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    else:
        info = _dist(site, "latin-1.0.dist-info", "latin", None)
        (info / "entry_points.txt").write_bytes(b"[capplan.policies]\nprompt_policy.caf\xe9 = l:L\n")
    assert scan() is None
    if case == "zip on sys.path":  # the registry asks importlib.metadata, which reads the zip
        assert policy_targets()["prompt_policy"]["zipped"] == "z:Z"


def test_pydantic_is_told_there_are_no_plugins_only_when_there_are_none(site: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic.plugin import _loader

    monkeypatch.setattr(_loader, "_plugins", None)
    skip_pydantic_plugin_scan()
    assert _loader._plugins == {}
    assert list(_loader.get_plugins()) == []

    _dist(site, "pyd_plugin-1.0.dist-info", "pyd-plugin", "[pydantic]\nmine = pyd_plugin:plugin\n")
    monkeypatch.setattr(_loader, "_plugins", None)
    entry_point_scan._MEMO.clear()
    skip_pydantic_plugin_scan()
    assert _loader._plugins is None  # pydantic looks for itself
    assert "pydantic" in GROUPS


THIRD_PARTY_MODULE = '''
from typing import Any, ClassVar

from capplan.executor.policies.prompt_policy import SystemPromptPolicy


class AcmePrompt(SystemPromptPolicy):
    """Appends a house rule."""

    name: ClassVar[str] = "acme"

    def enrich(self, system: str, tools: list[dict[str, Any]]) -> str:
        return system + " Be brief."
'''


def _capplan(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "capplan.cli", *args], cwd=site, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_cli_sees_a_third_party_policy_and_refuses_a_clashing_one(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "acme_policies.py").write_text(THIRD_PARTY_MODULE, encoding="utf-8")
    _dist(site, "acme_policies-1.0.dist-info", "acme-policies",
          "[capplan.policies]\nprompt_policy.acme = acme_policies:AcmePrompt\n")
    overlay = site / "overlay.yaml"
    overlay.write_text('presets:\n  acme:\n    match: ["acme-*"]\n    prompt_policy: acme\n', encoding="utf-8")
    run = site / "run.yaml"
    run.write_text("models:\n  acme-1:\n    provider: openai\n    name: acme-1\n", encoding="utf-8")

    linted = _capplan(site, "lint", str(overlay))
    assert linted.returncode == 0, linted.stdout + linted.stderr
    compiled = _capplan(site, "compile", "--config", str(run), "--presets-file", str(overlay), "--out", str(site / "plans"))
    assert compiled.returncode == 0, compiled.stderr
    plan = json.loads((site / "plans" / "acme-1.json").read_text(encoding="utf-8"))
    assert plan["policies"]["prompt_policy"]["name"] == "acme"

    _dist(site, "clash-2.0.dist-info", "Clash", "[capplan.policies]\nprompt_policy.none = clash:Other\n")
    refused = _capplan(site, "lint", str(overlay))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith(
        "capplan: policy registry cannot be built:\n  Clash (capplan.policies): duplicate policy name "
        "prompt_policy.none (already registered as capplan.executor.policies.prompt_policy:NoPromptEnrichment)"), refused.stderr
