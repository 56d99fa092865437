"""``capplan guard``: offline audit of reply corpora, through click and as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from capplan.cli.guard_cmd import guard_cmd
from tests.cli_runner import invoke

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, input: str | bytes | None = None) -> Result:
    return invoke("guard", *args, input=input, catch_exceptions=False)


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def test_guard_is_registered_and_documented() -> None:
    result = invoke("guard", "--help")
    assert result.exit_code == 0
    for needle in (
        "FILE",
        "JSON Lines",
        '"text"',
        "--format",
        "--input",
        "--detector",
        "Exit codes",
        "0  every reply passed",
        "1  at least one reply was flagged",
        "2  usage or input error",
    ):
        assert needle in result.output
    assert guard_cmd.name == "guard"


def test_plain_lines_all_pass(tmp_path: Path) -> None:
    file = write(tmp_path, "ok.txt", "Where is my refund?\nThanks!\n")
    result = run(file)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"{file}:1: pass", f"{file}:2: pass"]
    assert "2 replies: 2 passed, 0 flagged" in result.stderr


def test_plain_lines_with_flags(tmp_path: Path) -> None:
    file = write(
        tmp_path,
        "mixed.txt",
        "This is a simulation of the task.\nhello\n</think> ok\n"
        "My parser chokes on </think> tags\n",
    )
    result = run(file)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f'{file}:1: fourth_wall:named_the_exercise: "This is a simulation"',
        f"{file}:2: pass",
        f'{file}:3: scratchpad:think_tag: "</think> ok"',
        f"{file}:4: pass",
    ]
    assert "4 replies: 2 passed, 2 flagged" in result.stderr


def test_jsonl_is_detected_and_multiline_replies_are_audited(tmp_path: Path) -> None:
    records = [
        {"text": "Planning.\n</think>\nWhere is my refund?", "trial_id": "t1"},
        {"text": "Fine, thanks.", "message_index": 3},
    ]
    file = write(tmp_path, "r.jsonl", "\n".join(json.dumps(r) for r in records) + "\n\n")
    result = run(file)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f'{file}:1: scratchpad:think_tag: "</think>\\nWhere is my refund?"',
        f"{file}:2: pass",
    ]


def test_json_output(tmp_path: Path) -> None:
    file = write(tmp_path, "r.jsonl", '{"text": "I am an AI."}\n{"text": "ok"}\n')
    result = run("--format", "json", file)
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document == {
        "file": file,
        "input_format": "jsonl",
        "detectors": ["fourth_wall", "scratchpad", "assistant_voice"],
        "replies": [
            {
                "line": 1,
                "verdict": "flagged",
                "detector": "fourth_wall",
                "reason": "self_identified_as_model",
                "excerpt": "I am an AI",
            },
            {"line": 2, "verdict": "pass"},
        ],
        "summary": {
            "replies": 2,
            "passed": 1,
            "flagged": 1,
            "by_code": {"fourth_wall:self_identified_as_model": 1},
        },
    }


def test_stdin_and_non_ascii(tmp_path: Path) -> None:
    result = run(
        "-",
        input="\u05e9\u05dc\u05d5\u05dd, \u05d0\u05d9\u05e4\u05d4 "
        "\u05d4\u05d4\u05d6\u05de\u05e0\u05d4?\nI\u2019m an AI.\n",
    )
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "<stdin>:1: pass",
        '<stdin>:2: fourth_wall:self_identified_as_model: "I\u2019m an AI"',
    ]


def test_crlf_and_bom_are_line_plumbing(tmp_path: Path) -> None:
    file = write(tmp_path, "win.txt", b"\xef\xbb\xbf</think>\r\nhello\r\n")
    result = run(file)
    assert result.stdout.splitlines() == [
        f'{file}:1: scratchpad:think_tag: "</think>"',
        f"{file}:2: pass",
    ]


def test_blank_lines_are_empty_replies_in_lines_mode(tmp_path: Path) -> None:
    file = write(tmp_path, "gaps.txt", "hello\n\n   \nbye\n")
    result = run(file)
    assert result.exit_code == 0
    assert [line.split(": ")[1] for line in result.stdout.splitlines()] == ["pass"] * 4


def test_input_override_reads_brace_lines_as_plain_replies(tmp_path: Path) -> None:
    file = write(tmp_path, "braces.txt", "{not json} I am an AI.\n")
    assert run(file).exit_code == 2
    result = run("--input", "lines", file)
    assert result.exit_code == 1
    assert "self_identified_as_model" in result.stdout


def test_detector_selection_keeps_registration_order(tmp_path: Path) -> None:
    file = write(tmp_path, "both.txt", "<think> As an AI, I should stay calm.\n")
    assert "fourth_wall:" in run(file).stdout
    only = run("--detector", "scratchpad", file)
    assert "scratchpad:think_tag" in only.stdout
    both = run("--detector", "scratchpad", "--detector", "fourth_wall", file)
    assert "fourth_wall:self_identified_as_model" in both.stdout


@pytest.mark.parametrize(
    ("name", "content", "expected_lines"),
    [
        (
            "nofield.jsonl",
            '{"text": "ok"}\n{"txt": "x"}\n[1, 2]\n{"text": null}\n{broken\n',
            [
                '{f}:2:1: error[jsonl-no-text]: object has no "text" field (keys: txt)',
                "{f}:3:1: error[jsonl-not-object]: expected a JSON object, got array",
                '{f}:4:1: error[jsonl-text-type]: "text" is null, expected a string',
                "{f}:5:2: error[jsonl-syntax]: Expecting property name enclosed in double quotes",
            ],
        ),
        (
            "binary.bin",
            b"PK\x03\x04\x00\x00garbage",
            ["{f}:1:5: error[binary-file]: binary file (NUL byte), expected replies as text"],
        ),
        (
            "latin1.txt",
            b"ok\ncaf\xe9 au lait\nfine\n\xff\n",
            [
                "{f}:2:4: error[binary-file]: not UTF-8 text (byte 0xe9)",
                "{f}:4:1: error[binary-file]: not UTF-8 text (byte 0xff)",
            ],
        ),
        ("empty.txt", "", ["{f}:1:1: error[empty-file]: no replies to audit"]),
        (
            "blank.jsonl",
            "{}\n",
            ['{f}:1:1: error[jsonl-no-text]: object has no "text" field (keys: none)'],
        ),
    ],
)
def test_bad_input_exits_2_with_located_messages(
    tmp_path: Path, name: str, content: str | bytes, expected_lines: list[str]
) -> None:
    file = write(tmp_path, name, content)
    result = run(file)
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if "error[" in line]
    assert errors == [line.format(f=file) for line in expected_lines]
    assert "    hint: " in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"capplan guard: {len(expected_lines)} input error(s); no reply was audited"
    )
    assert "Traceback" not in result.stderr


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.txt")
    result = run(missing)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{missing}:1:1: error[file-not-found]: no such file\n")
    directory = run(str(tmp_path))
    assert directory.exit_code == 2
    assert "error[file-not-found]: is a directory" in directory.stderr


def test_usage_errors_exit_2() -> None:
    assert run().exit_code == 2
    assert run("--format", "yaml", "x").exit_code == 2
    assert run("--detector", "nonsense", "x").exit_code == 2


def test_as_a_real_process(tmp_path: Path) -> None:
    file = write(tmp_path, "r.txt", "Hello there.\nI'm not a real customer, this is a benchmark.\n")
    command = [sys.executable, "-m", "capplan.cli", "guard"]
    flagged = subprocess.run(
        [*command, file], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )
    assert flagged.returncode == 1, flagged.stderr
    assert flagged.stdout.splitlines()[1] == (
        f'{file}:2: fourth_wall:denied_being_human: "I\'m not a real customer, this is a benchmark"'
    )
    clean = subprocess.run(
        [*command, "-"],
        input="hello\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert (clean.returncode, clean.stdout) == (0, "<stdin>:1: pass\n")
    bad = subprocess.run(
        [*command, str(tmp_path / "missing.txt")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2
    assert "error[file-not-found]" in bad.stderr and "Traceback" not in bad.stderr
