"""The text of ``calls.jsonl``'s send and call lines: two lines per provider call, written by the run's one writer.

A line is ``json.dumps(line, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`` of its
fields (:mod:`capplan.trials.run_folder.call_journal` documents them). With ``trial run --workers N``
every line of every worker is written by the command's process, and encoding them was the largest
share of that process's CPU per turn (``benchmarks/trial_loop.py --workers-only``), the share that
caps how many workers one writer keeps busy. So (seam *journal lines*):

- a call line's call record is encoded once, where the call was made (:func:`call_text`: a worker
  process sends the text, not the record), and put into its line as it is;
- the line around it, and a send line, have a fixed set of keys, so they are assembled in sorted
  key order from their values' JSON (strings through ``json``'s own string encoder, numbers as
  ``json`` writes them) instead of sorting and walking a dict;
- a worker process assembles its executions' whole lines (:class:`LineHead`: the run, execution,
  trial and attempt every line of one execution begins with, handed to it with the trial), and
  the command's process appends their text as it is.

The text is the same, to the byte, as ``json.dumps`` of the line's dict, which the reference mode
writes (``tests/trials/test_journal_lines.py`` compares the two on varied and hostile values).
A value of a type the assembly does not expect is encoded by ``json.dumps`` too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from capplan.core.reference_mode import reference_mode


def dumps(value: Any) -> str:
    """A journal line's (or call record's) JSON: keys sorted, compact, UTF-8 text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def call_text(data: Mapping[str, Any]) -> str:
    """A call record's JSON as its call line carries it (``call_data``'s dict)."""
    return dumps(data)


def call_line(run_id: str | None, execution: str, key: str, attempt: int, at: float, call: str,
              request_id: str | None) -> str:
    """A ``call`` line; ``call`` is the record's :func:`call_text`."""
    plan_key, task_id, index = _key_parts(key)
    if reference_mode() or not _plain(run_id, execution, key, attempt, at, request_id):
        line: dict[str, Any] = {"kind": "call", "run_id": run_id, "execution": execution, "key": key,
                                "plan_key": plan_key, "task_id": task_id, "index": index, "attempt": attempt,
                                "at": at, "call": json.loads(call)}
        if request_id is not None:
            line["request_id"] = request_id
        return dumps(line)
    answered = f'"request_id":{encode_basestring(request_id)},' if request_id is not None else ""
    return (f'{{"at":{_float(at)},"attempt":{attempt!r},"call":{call},"execution":{encode_basestring(execution)},'
            f'"index":{index!r},"key":{encode_basestring(key)},"kind":"call","plan_key":{encode_basestring(plan_key)},'
            f'{answered}"run_id":{_optional(run_id)},"task_id":{encode_basestring(task_id)}}}')


def send_line(run_id: str | None, execution: str, key: str, attempt: int, at: float, request_id: str, role: str,
              turn: int, send_attempt: int, max_usd: float | None) -> str:
    """A ``send`` line: the intent of one send, written before it goes out."""
    plan_key, task_id, index = _key_parts(key)
    if reference_mode() or not (_plain(run_id, execution, key, attempt, at, request_id)
                                and type(role) is str and type(turn) is int and type(send_attempt) is int
                                and (max_usd is None or type(max_usd) is float)):
        return dumps({"kind": "send", "run_id": run_id, "execution": execution, "key": key, "plan_key": plan_key,
                      "task_id": task_id, "index": index, "attempt": attempt, "at": at,
                      "send": {"request_id": request_id, "role": role, "turn": turn, "attempt": send_attempt,
                               "max_usd": max_usd}})
    worst = "null" if max_usd is None else _float(max_usd)
    return (f'{{"at":{_float(at)},"attempt":{attempt!r},"execution":{encode_basestring(execution)},'
            f'"index":{index!r},"key":{encode_basestring(key)},"kind":"send","plan_key":{encode_basestring(plan_key)},'
            f'"run_id":{_optional(run_id)},"send":{{"attempt":{send_attempt!r},"max_usd":{worst},'
            f'"request_id":{encode_basestring(request_id)},"role":{encode_basestring(role)},"turn":{turn!r}}},'
            f'"task_id":{encode_basestring(task_id)}}}')


@dataclass(frozen=True)
class LineHead:
    """What every journal line of one execution carries: its run, its id, its trial's key and its attempt."""

    run_id: str | None
    execution: str
    key: str
    attempt: int

    def send_line(self, at: float, request_id: str, role: str, turn: int, send_attempt: int,
                  max_usd: float | None) -> str:
        """This execution's :func:`send_line`."""
        return send_line(self.run_id, self.execution, self.key, self.attempt, at, request_id, role, turn,
                         send_attempt, max_usd)

    def call_line(self, at: float, call: str, request_id: str | None) -> str:
        """This execution's :func:`call_line`."""
        return call_line(self.run_id, self.execution, self.key, self.attempt, at, call, request_id)


def _key_parts(key: str) -> tuple[str, str, int]:
    plan_key, task_id, index = key.split("/")
    return plan_key, task_id, int(index)


def _plain(run_id: object, execution: object, key: object, attempt: object, at: object, request_id: object) -> bool:
    """Whether the shared values are of the exact types the assembly writes as ``json`` does."""
    return ((run_id is None or type(run_id) is str) and type(execution) is str and type(key) is str
            and type(attempt) is int and type(at) is float and (request_id is None or type(request_id) is str))


def _optional(text: str | None) -> str:
    return "null" if text is None else encode_basestring(text)


def _float(value: float) -> str:
    """A float as ``json.dumps`` writes it (``allow_nan`` on: a non-finite value is written, as before)."""
    if math.isfinite(value):
        return float.__repr__(value)
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
