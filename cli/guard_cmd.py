"""``capplan guard``: run the user-reply guard's detectors over a corpus of past replies."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import click

from capplan.cli.common import format_option
from capplan.cli.errors import CommandExit, ExitCode
from capplan.core.diagnostics import Diagnostic, InputError
from capplan.trials.usersim.detectors.base import ReplyDetector
from capplan.trials.usersim.guard import DEFAULT_REPLY_DETECTORS, ReplyDefect, UserReplyGuard

InputFormat = Literal["lines", "jsonl"]

_STDIN_NAME = "<stdin>"
_BOM = b"\xef\xbb\xbf"
_JSONL_HINT = 'each non-blank line must be a JSON object with a string "text" field'


@dataclass(frozen=True, slots=True)
class _Reply:
    line: int
    text: str


class GuardInputError(InputError):
    """A replies file the guard cannot audit: every problem located, and nothing audited."""

    code = "GUARD_INPUT"

    def render(self) -> str:
        lines = [d.render() for d in self.diagnostics]
        return "\n".join([*lines, f"capplan guard: {len(self.diagnostics)} input error(s); no reply was audited"])


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _read_bytes(file: str) -> bytes:
    if file == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(file).read_bytes()
    except FileNotFoundError:
        problem = Diagnostic(
            file, 1, 1, "file-not-found", "no such file", hint="use - to read standard input"
        )
    except IsADirectoryError:
        problem = Diagnostic(file, 1, 1, "file-not-found", "is a directory, not a file")
    except OSError as exc:
        problem = Diagnostic(file, 1, 1, "file-unreadable", str(exc.strerror or exc))
    raise InputError([problem])


def _split_lines(source: str, data: bytes) -> list[tuple[int, str]]:
    """Decoded lines, 1-based; every undecodable line is reported, not just the first."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        raise InputError(
            [
                Diagnostic(
                    source,
                    line,
                    col,
                    "binary-file",
                    "binary file (NUL byte), expected replies as text",
                    hint='one UTF-8 reply per line, or JSON Lines with a "text" field',
                )
            ]
        )
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    lines: list[tuple[int, str]] = []
    problems: list[Diagnostic] = []
    for number, raw in enumerate(raw_lines, start=1):
        # CRLF files: the CR is line plumbing, not part of the reply.
        raw = raw.removesuffix(b"\r")
        try:
            lines.append((number, raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            problems.append(
                Diagnostic(
                    source,
                    number,
                    exc.start + 1,
                    "binary-file",
                    f"not UTF-8 text (byte 0x{raw[exc.start]:02x})",
                    hint="re-encode the file as UTF-8 (e.g. iconv -t UTF-8)",
                )
            )
    if problems:
        raise InputError(problems)
    return lines


def _detect_format(lines: Sequence[tuple[int, str]]) -> InputFormat:
    for _, text in lines:
        if text.strip():
            # A reply that opens with "{" is rare enough that the brace decides; --input lines
            # overrides it for the file that needs it.
            return "jsonl" if text.lstrip().startswith("{") else "lines"
    return "lines"


def _parse_jsonl(source: str, lines: Sequence[tuple[int, str]]) -> list[_Reply]:
    replies: list[_Reply] = []
    problems: list[Diagnostic] = []
    for number, text in lines:
        if not text.strip():
            continue
        try:
            record: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = f"{_JSONL_HINT}; use --input lines for plain text"
            problems.append(
                Diagnostic(source, number, exc.colno, "jsonl-syntax", exc.msg, hint=hint)
            )
            continue
        problem: tuple[str, str] | None = None
        if not isinstance(record, dict):
            problem = ("jsonl-not-object", f"expected a JSON object, got {_json_type(record)}")
        elif "text" not in record:
            keys = ", ".join(sorted(record)) or "none"
            problem = ("jsonl-no-text", f'object has no "text" field (keys: {keys})')
        elif not isinstance(record["text"], str):
            problem = (
                "jsonl-text-type",
                f'"text" is {_json_type(record["text"])}, expected a string',
            )
        if problem is None:
            replies.append(_Reply(number, record["text"]))
        else:
            problems.append(Diagnostic(source, number, 1, problem[0], problem[1], hint=_JSONL_HINT))
    if problems:
        raise InputError(problems)
    return replies


def _load(file: str, requested: str) -> tuple[str, InputFormat, list[_Reply]]:
    """The replies in ``file``, or an :class:`InputError` naming every problem in it."""
    source = _STDIN_NAME if file == "-" else file
    lines = _split_lines(source, _read_bytes(file))
    chosen: InputFormat
    if requested == "auto":
        chosen = _detect_format(lines)
    else:
        chosen = "jsonl" if requested == "jsonl" else "lines"
    if chosen == "jsonl":
        replies = _parse_jsonl(source, lines)
    else:
        replies = [_Reply(number, text) for number, text in lines]
    if not replies:
        raise InputError(
            [
                Diagnostic(
                    source, 1, 1, "empty-file", "no replies to audit", hint="the file is empty"
                )
            ]
        )
    return source, chosen, replies


def _select_detectors(names: Sequence[str]) -> tuple[ReplyDetector, ...]:
    if not names:
        return DEFAULT_REPLY_DETECTORS
    wanted = set(names)
    # Registration order, not command-line order: the first detector to flag owns a reply.
    return tuple(d for d in DEFAULT_REPLY_DETECTORS if d.name in wanted)


def _verdict_record(reply: _Reply, defect: ReplyDefect | None) -> dict[str, Any]:
    if defect is None:
        return {"line": reply.line, "verdict": "pass"}
    return {"line": reply.line, "verdict": "flagged", **defect.to_record()}


@click.command(
    "guard",
    context_settings={"help_option_names": ["-h", "--help"]},
    short_help="Audit user-simulator replies offline with the reply guard.",
)
@click.argument("file", metavar="FILE")
@click.option(
    "--input",
    "input_format",
    type=click.Choice(["auto", "lines", "jsonl"]),
    default="auto",
    show_default=True,
    help="How FILE holds replies. auto: JSON Lines when the first non-blank line starts "
    "with '{', otherwise one reply per line.",
)
@format_option("text", "json")
@click.option(
    "--detector",
    "detector_names",
    multiple=True,
    type=click.Choice([detector.name for detector in DEFAULT_REPLY_DETECTORS]),
    help="Run only this detector (repeatable). Default: every registered detector, in "
    "registration order.",
)
def guard_cmd(file: str, input_format: str, fmt: str, detector_names: tuple[str, ...]) -> None:
    """Audit user-simulator replies offline with the reply guard.

    Runs the same detectors, in the same order, as the guard that stands between the user
    simulator and the agent over every reply in FILE, and prints for each one `pass` or
    `detector:reason` with the matched excerpt. Nothing is regenerated or edited: this only
    reports what the guard would have discarded.

    FILE holds one reply per line, or JSON Lines whose objects carry the reply in a "text"
    field (other fields are ignored; use JSON Lines for replies that span lines). Use - to
    read standard input. Replies are located by line number.

    \b
    Examples:
      capplan guard examples/guard/replies.txt
      capplan guard --format json examples/guard/transcripts.jsonl > audit.json
      jq -c '{text: .content}' turns.jsonl | capplan guard -

    \b
    --format text   FILE:LINE: pass | FILE:LINE: detector:reason: "excerpt",
                    then a summary line on stderr
    --format json   {"file", "input_format", "detectors", "replies": [{line, verdict,
                    detector, reason, excerpt}], "summary": {replies, passed, flagged,
                    by_code}}

    \b
    Exit codes:
      0  every reply passed
      1  at least one reply was flagged
      2  usage or input error: missing file, binary or non-UTF-8 file, a JSON line
         without a string "text" field, no replies at all; every problem is reported
         as FILE:LINE:COL: error[CODE]: message
    """
    try:
        source, chosen, replies = _load(file, input_format)
    except InputError as exc:
        raise GuardInputError(exc.diagnostics) from None
    guard = UserReplyGuard(_select_detectors(detector_names))
    verdicts = [(reply, guard.inspect(reply.text)) for reply in replies]
    flagged = [defect for _, defect in verdicts if defect is not None]

    if fmt == "json":
        by_code = Counter(defect.code for defect in flagged)
        document = {
            "file": source,
            "input_format": chosen,
            "detectors": [detector.name for detector in guard.detectors],
            "replies": [_verdict_record(reply, defect) for reply, defect in verdicts],
            "summary": {
                "replies": len(verdicts),
                "passed": len(verdicts) - len(flagged),
                "flagged": len(flagged),
                "by_code": dict(sorted(by_code.items())),
            },
        }
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        for reply, defect in verdicts:
            if defect is None:
                click.echo(f"{source}:{reply.line}: pass")
            else:
                excerpt = json.dumps(defect.excerpt, ensure_ascii=False)
                click.echo(f"{source}:{reply.line}: {defect.code}: {excerpt}")
        click.echo(
            f"{len(verdicts)} replies: {len(verdicts) - len(flagged)} passed, "
            f"{len(flagged)} flagged",
            err=True,
        )
    if flagged:
        raise CommandExit(ExitCode.FINDINGS)
