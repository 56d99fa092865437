"""A real git repository for ``capplan diff --base`` tests, built the same way every time.

Commit 1 holds a copy of the bundled data under ``data/``, a run config and an operator
overlay. Commit 2 changes a preset (the Claude 4.7 watermark), the overlay (a value rule, a
litellm declaration and OpenRouter routing) and the run config (one model swapped). Author,
committer and dates are pinned, so commit ids only change when the copied data does.

Goldens of the outputs live in tests/diff/golden/ and are written only by
``python -m tests.diff.regen_golden``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from capplan.presets import data_dir

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = "python -m tests.diff.regen_golden"
GIT_TIMEOUT = 60

RUN_CONFIG_V1 = """\
engine:
  presets_file: ops-overlay.yaml
models:
  claude-opus-4.7:
    provider: anthropic
    name: claude-opus-4.7
    temperature: 0.0
    reasoning: {mode: budget, budget_tokens: 8000}
  kimi-k3:
    provider: openrouter
    name: moonshotai/kimi-k3
    temperature: 0.0
    reasoning: {mode: adaptive, effort_hint: high}
  gpt-4o:
    provider: openai
    name: gpt-4o
    temperature: 0.0
    seed: 7
  muse:
    provider: meta
    name: muse-spark-1.2
    temperature: 0.0
  qwen3-32b:
    provider: openrouter
    name: qwen/qwen3-32b
    temperature: 0.0
"""

RUN_CONFIG_V2 = RUN_CONFIG_V1.replace(
    "  qwen3-32b:\n    provider: openrouter\n    name: qwen/qwen3-32b\n",
    "  grok-4:\n    provider: openrouter\n    name: x-ai/grok-4\n",
)

OVERLAY_V1 = """\
presets:
  meta_muse:
    match: ["meta/muse-*", "muse-*"]
    reasoning_codec: openai
litellm_models:
  meta/muse-spark-1.2:
    supports_function_calling: true
    evidence: "2026-08-10, litellm 1.96.0: no entry; tools work through the openai transport"
"""

OVERLAY_V2 = """\
presets:
  meta_muse:
    match: ["meta/muse-*", "muse-*"]
    reasoning_codec: openai
    params:
      param_value_rules:
        tool_choice:
          required: {action: drop, evidence: "2026-09-02, meta API: 400 on tool_choice=required"}
providers:
  openrouter:
    openrouter_defaults:
      allow_fallbacks: true
litellm_models:
  meta/muse-spark-1.2:
    supports_function_calling: true
    supports_reasoning: true
    evidence: "2026-09-02, litellm 1.96.0: no entry; tools and reasoning_effort work through the openai transport"
"""

WATERMARK_OLD = "    context_watermark: 12000\n"
WATERMARK_NEW = "    context_watermark: 16000\n"

#: the command line of each golden output, run from the scenario repository with --base HEAD~1
GOLDEN_CASES: dict[str, list[str]] = {
    "base.md": ["--format", "markdown"],
    "base.json": ["--format", "json"],
    "base.txt": ["--format", "text"],
    "base-summary.md": ["--summary", "--format", "markdown"],
    "base-summary.json": ["--summary", "--format", "json"],
}
BASE_ARGS = ["diff", "--base", "HEAD~1", "--data", "data", "--config", "configs/run.yaml"]


def git_env() -> dict[str, str]:
    """The environment for git in tests: no user or system config, pinned identities and dates."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "capplan tests", "GIT_AUTHOR_EMAIL": "tests@capplan.invalid",
        "GIT_COMMITTER_NAME": "capplan tests", "GIT_COMMITTER_EMAIL": "tests@capplan.invalid",
        "GIT_AUTHOR_DATE": "2026-09-01T12:00:00+00:00", "GIT_COMMITTER_DATE": "2026-09-01T12:00:00+00:00",
    })
    return env


def git(cwd: Path, *args: str) -> str:
    """Run git; fail loudly with its stderr."""
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args], cwd=cwd,
                          env=git_env(), capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} failed: {done.stderr}"
    return done.stdout.strip()


def write(path: Path, text: str) -> None:
    """Write a text file, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build_repo(root: Path) -> dict[str, str]:
    """Create the two-commit repository at ``root``; returns the commit ids by name."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for name in ("model_presets.yaml", "providers.yaml", "pricing.json"):
        (root / "data").mkdir(exist_ok=True)
        shutil.copy(data_dir() / name, root / "data" / name)
    write(root / "configs" / "run.yaml", RUN_CONFIG_V1)
    write(root / "configs" / "ops-overlay.yaml", OVERLAY_V1)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base: bundled data, run config, operator overlay")
    first = git(root, "rev-parse", "HEAD")

    presets = root / "data" / "model_presets.yaml"
    text = presets.read_text(encoding="utf-8")
    assert text.count(WATERMARK_OLD) == 1, "the bundled presets no longer hold the one watermark this scenario edits"
    presets.write_text(text.replace(WATERMARK_OLD, WATERMARK_NEW), encoding="utf-8")
    write(root / "configs" / "ops-overlay.yaml", OVERLAY_V2)
    write(root / "configs" / "run.yaml", RUN_CONFIG_V2)
    git(root, "commit", "-q", "-a", "-m", "raise the Claude 4.7 watermark; muse rules; openrouter fallbacks")
    return {"first": first, "second": git(root, "rev-parse", "HEAD")}


def normalise(text: str, commits: dict[str, str]) -> str:
    """Mask what changes whenever the bundled data does (digests, commit ids), so goldens pin the format."""
    for name, sha in commits.items():
        text = text.replace(sha[:12], f"<{name}-commit>")
    return re.sub(r"\b[0-9a-f]{64}\b", "<sha256>", text)
