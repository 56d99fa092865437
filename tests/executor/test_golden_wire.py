"""Golden wire requests for every compiled plan x the fixed conversation set."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capplan.executor import golden_wire
from tests.executor.plans import make_plan

ROOT = Path(__file__).resolve().parents[2]


def test_goldens_match_every_plan_and_conversation() -> None:
    if not golden_wire.plan_files(ROOT):
        pytest.skip("golden/plans has no compiled plans yet (`capplan compile` writes them); nothing to compare")
    problems = golden_wire.check(ROOT)
    assert not problems, (
        f"{len(problems)} golden wire request(s) out of date:\n  " + "\n  ".join(problems)
        + f"\nregenerate with: {golden_wire.REGENERATE}"
    )


def test_conversation_set_covers_the_required_shapes() -> None:
    convs = golden_wire.conversations(ROOT)
    assert set(convs) == {
        "dict_map_tools",
        "discriminated_union",
        "recursive_ref",
        "signed_thinking_replay",
        "summary_replay",
        "empty_assistant_content",
        "tool_result_images",
    }
    replay = convs["signed_thinking_replay"].messages[1]
    assert [b.type for b in replay.reasoning.blocks] == ["thinking", "redacted_thinking"]  # type: ignore[union-attr]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "golden" / "plans").mkdir(parents=True)
    shutil.copytree(ROOT / "golden" / "conversations", tmp_path / "golden" / "conversations")
    anthropic = make_plan(
        "anthropic",
        "claude-golden",
        key="claude-golden",
        policies={"content_policy": "anthropic", "reasoning_codec": "anthropic", "cache_policy": "anthropic_ephemeral"},
        params={"reasoning_via_thinking_kwarg": True, "drop_sampling_when_thinking": True},
    )
    strict = make_plan("openai", "gpt-golden", key="gpt-golden", policies={"schema_sanitizer": "strict", "response_policy": "array_dict_map"})
    nova = make_plan("nova", "busan-golden", key="busan-golden", policies={"content_policy": "nova", "message_assembly_policy": "nova"})
    for plan in (anthropic, strict, nova):
        (tmp_path / "golden" / "plans" / f"{plan.model.key}.json").write_bytes(plan.to_bytes())
    return tmp_path


def test_update_then_check_is_clean_and_stores_refusals(project: Path) -> None:
    assert golden_wire.check(project)[0].startswith("missing: golden/wire/")
    written = golden_wire.update(project)
    assert len(written) == 3 * 7
    assert golden_wire.check(project) == []
    wire = project / "golden" / "wire"
    # Claude with a thinking kwarg refuses an adaptive effort; strict refuses a recursive $ref
    assert '"code": "REASONING"' in (wire / "claude-golden" / "summary_replay.json").read_text()
    assert '"code": "TOOL_SCHEMA"' in (wire / "gpt-golden" / "recursive_ref.json").read_text()
    # credentials pinned by nova's binding are redacted, never the golden's placeholder
    nova = (wire / "busan-golden" / "dict_map_tools.json").read_text()
    assert '"api_key": "<redacted>"' in nova and golden_wire.GOLDEN_CREDENTIAL not in nova
    assert '"content": "I\'ll help you with that."' in (wire / "busan-golden" / "empty_assistant_content.json").read_text()
    assert '"thinking_blocks"' in (wire / "claude-golden" / "signed_thinking_replay.json").read_text()


def test_stale_missing_and_unused_goldens_fail_with_the_command(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden_wire.update(project)
    wire = project / "golden" / "wire"
    (wire / "gpt-golden" / "dict_map_tools.json").write_text("{}\n")
    (wire / "claude-golden" / "tool_result_images.json").unlink()
    (wire / "claude-golden" / "retired_conversation.json").write_text("{}\n")
    assert golden_wire.check(project) == [
        "missing: golden/wire/claude-golden/tool_result_images.json",
        "stale: golden/wire/gpt-golden/dict_map_tools.json",
        "unused: golden/wire/claude-golden/retired_conversation.json",
    ]
    assert golden_wire.main(["--root", str(project)]) == 1
    assert golden_wire.REGENERATE in capsys.readouterr().err
    assert golden_wire.main(["--root", str(project), "--check"]) == 1  # the module's docstring names it
    assert golden_wire.main(["--root", str(project), "--update"]) == 0
    assert golden_wire.main(["--root", str(project)]) == 0
    assert golden_wire.main(["--root", str(project), "--check"]) == 0
