"""Third-party policies arrive through importlib.metadata entry points, and clashes fail loud naming the distribution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from capplan.executor.registry import RegistryError, policy_targets

REPO = Path(__file__).resolve().parents[2]


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
    policy_targets.cache_clear()
    yield folder
    policy_targets.cache_clear()


def test_first_distribution_of_a_name_wins_and_file_syntax_is_read(site: Path, tmp_path: Path,
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
    before = policy_targets()
    assert "late" not in before["prompt_policy"]
    _dist(site, "late-1.0.dist-info", "late", "[capplan.policies]\nprompt_policy.late = late:Late\n")
    policy_targets.cache_clear()
    assert policy_targets()["prompt_policy"]["late"] == "late:Late"


def test_a_zipped_distribution_on_sys_path_is_read(site: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[capplan.policies]\nprompt_policy.zipped = z:Z\n")
    monkeypatch.syspath_prepend(str(archive))
    assert policy_targets()["prompt_policy"]["zipped"] == "z:Z"


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
