"""A run as inspect_ai eval logs: one ``.eval`` file per plan, that ``inspect view`` opens.

The ``.eval`` format (inspect_ai's log format version 2) is a zip of JSON members:
``header.json`` (the ``EvalLog`` without its samples: the eval's identity, results and usage),
``samples/<id>_epoch_<n>.json`` (one ``EvalSample`` each), ``summaries.json`` (the sample list
the viewer shows first) and ``_journal/start.json`` (what a log holds from its start). Written
here from that shape; capplan never imports inspect_ai (a test reads the files back with
inspect_ai's own ``read_eval_log`` where it is installed).

How a run maps onto it:

- one eval per plan (inspect's eval is one task set on one model); ``eval.task`` is the run's
  label, ``eval.model`` the plan's key, and capplan's identity (run id, plan fingerprint, effective
  presets) is in ``eval.metadata["capplan"]``;
- one sample per trial: ``id`` the task id, ``epoch`` the trial index + 1 (inspect counts epochs
  from 1), the trajectory's system prompt and messages as chat messages (tool calls with their
  arguments, tool results with their errors, reasoning as reasoning content), the row of
  ``trial report --format csv`` as its metadata;
- the pass verdict as score ``capplan`` (``C`` passed, ``I`` not passed; an ungraded trial has
  none), each grader's verdict as a score of its own (``grader/<name>``), with the grader's note
  and detail; results hold accuracy over graded trials, as capplan's pass rate counts them;
- token usage and cost per model: the agent's under the plan's key, the user simulator's under
  ``user-simulator``; a cost capplan does not know is left out, never written as 0;
- a trial that ended error, aborted or interrupted carries an ``error`` saying how it ended.

Every text passes the process redactor again before it is written.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from collections.abc import Callable
from datetime import datetime, UTC
from typing import Any

from capplan.core.redaction import redact_text
from capplan.trials.report.compare import Column
from capplan.trials.report.run_data import LoadedRun, TrialResult

#: inspect_ai's log format version these files follow
LOG_VERSION = 2
#: the sample score that holds capplan's pass verdict
VERDICT_SCORE = "capplan"
#: the model_usage key the user simulator's tokens and cost are listed under
USER_SIMULATOR = "user-simulator"
#: tool-call arguments nested deeper than this are kept as their text (a parse error), never walked
MAX_ARGUMENT_DEPTH = 64
#: a fixed time for every member, so the same run exports to the same bytes
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)

Row = Callable[[TrialResult, Column], dict[str, Any]]


def _utc(stamp: str | None) -> str | None:
    """An ISO time as inspect writes it (UTC, ``+00:00``); None when absent or unreadable."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat()


def _clean(value: Any) -> Any:
    """``value`` as JSON data: every string redacted, non-finite floats as text, other scalars as text."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact_text(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact_text(str(value))  # a date or another YAML scalar


def _text(value: Any) -> str:
    """A message's content as text: a string as it is, parts joined, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") if isinstance(p, dict) and isinstance(p.get("text"), str) else
                 json.dumps(p, ensure_ascii=False, default=str) for p in value]
        return "\n".join(str(p) for p in parts)
    return json.dumps(value, ensure_ascii=False, default=str)


def _reasoning(raw: Any) -> list[dict[str, Any]]:
    """capplan's recorded reasoning (blocks and a summary) as inspect reasoning content."""
    if not isinstance(raw, dict):
        return []
    out: list[dict[str, Any]] = []
    for block in raw.get("blocks") or []:
        if not isinstance(block, dict):
            continue
        text = block.get("text")
        part: dict[str, Any] = {"type": "reasoning", "reasoning": text if isinstance(text, str) else "",
                                "redacted": not isinstance(text, str) and bool(block.get("encrypted_data"))}
        if isinstance(block.get("signature"), str):
            part["signature"] = block["signature"]
        out.append(part)
    summary = raw.get("summary")
    if isinstance(summary, str) and summary:
        if out:
            out[0]["summary"] = summary
        else:
            out.append({"type": "reasoning", "reasoning": summary, "summary": summary, "redacted": False})
    return out


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments as an object, and the parse error when the model sent something else."""
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError) as exc:  # hostile: not JSON, a 5 000-digit number, 10 000 brackets deep
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            return {}, f"arguments are not JSON ({why}): {raw[:2000]}"
        if isinstance(parsed, dict):
            if _deeper_than(parsed, MAX_ARGUMENT_DEPTH):  # kept as text: walking it again must not overflow the stack
                return {}, f"arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels: {raw[:2000]}"
            return parsed, None
        return {}, f"arguments are JSON but not an object: {raw[:2000]}"
    return {}, None if raw is None else f"arguments are not an object: {str(raw)[:2000]}"


def messages(trajectory: dict[str, Any], model: str, sample: str) -> list[dict[str, Any]]:
    """The trajectory's conversation as inspect chat messages (ids fixed by position: same run, same bytes)."""
    errors = {c.get("id"): c.get("error") for c in trajectory.get("tool_calls") or [] if isinstance(c, dict)}
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    system = trajectory.get("effective_system_prompt") or trajectory.get("system_prompt")
    if system:
        out.append({"content": _text(system), "role": "system", "source": "input"})
    for message in trajectory.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            reasoning = _reasoning(message.get("reasoning"))
            text = _text(message.get("content"))
            content: str | list[dict[str, Any]] = [*reasoning, {"type": "text", "text": text}] if reasoning else text
            entry: dict[str, Any] = {"content": content, "role": "assistant", "source": "generate", "model": model}
            calls = []
            for call in message.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                raw_function = call.get("function")
                function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
                name = str(function.get("name") or call.get("name") or "")
                args, problem = _arguments(function.get("arguments", call.get("arguments")))
                call_id = str(call.get("id") or "")
                names[call_id] = name
                shaped: dict[str, Any] = {"id": call_id, "function": name, "arguments": args, "type": "function"}
                if problem is not None:
                    shaped["parse_error"] = problem
                calls.append(shaped)
            if calls:
                entry["tool_calls"] = calls
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            entry = {"content": _text(message.get("content")), "role": "tool", "tool_call_id": call_id}
            if call_id in names:
                entry["function"] = names[call_id]
            if errors.get(call_id):
                entry["error"] = {"type": "unknown", "message": f"{errors[call_id]}: {_text(message.get('content'))}"}
        elif role in ("user", "system"):
            entry = {"content": _text(message.get("content")), "role": role, "source": "input"}
        else:  # a role inspect has no message for: kept, as a user-side note saying what it was
            entry = {"content": f"[{role}] {_text(message.get('content'))}", "role": "user"}
        out.append(entry)
    for i, entry in enumerate(out):
        entry["id"] = f"{sample}-m{i}"
    return out


def _usage(usage: Any, total: int | None, cost: float | None) -> dict[str, Any] | None:
    """One model's usage in inspect's shape; None when nothing was used or recorded."""
    if not isinstance(usage, dict):
        usage = {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    if not (prompt or completion or total or cost):
        return None
    out: dict[str, Any] = {"input_tokens": prompt, "output_tokens": completion,
                           "total_tokens": int(total if total is not None else prompt + completion)}
    for theirs, ours in (("input_tokens_cache_write", "cache_write_tokens"),
                         ("input_tokens_cache_read", "cache_read_tokens"), ("reasoning_tokens", "reasoning_tokens")):
        if usage.get(ours):
            out[theirs] = int(usage[ours])
    if cost is not None:  # unknown stays unknown
        out["total_cost"] = cost
    return out


def _add_usage(into: dict[str, dict[str, Any]], model: str, usage: dict[str, Any]) -> None:
    mine = into.setdefault(model, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
    for name, value in usage.items():
        if name == "total_cost":
            continue
        mine[name] = mine.get(name, 0) + value
    # a total cost only while every part of it is known
    known = mine.get("_cost_known", True) and "total_cost" in usage
    mine["_cost_known"] = known
    mine["total_cost"] = (mine.get("total_cost") or 0.0) + usage["total_cost"] if known else None


def _finish_usage(usage: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for model, values in usage.items():
        shaped = {k: v for k, v in values.items() if k != "_cost_known" and v is not None}
        out[model] = shaped
    return out


def _score(passed: Any, explanation: str | None, metadata: dict[str, Any] | None) -> dict[str, Any]:
    score: dict[str, Any] = {"value": "C" if passed else "I", "history": []}
    if explanation:
        score["explanation"] = explanation
    if metadata:
        score["metadata"] = metadata
    return score


def _scores(trial: TrialResult, grade: Any) -> dict[str, dict[str, Any]]:
    """The pass verdict and each grader's, as inspect scores (an ungraded trial has none)."""
    grade = grade if isinstance(grade, dict) else {}
    scores: dict[str, dict[str, Any]] = {}
    if trial.passed is not None:
        note = grade.get("note")
        scores[VERDICT_SCORE] = _score(trial.passed, note if isinstance(note, str) else None,
                                       {"outcome": trial.outcome, "status": trial.status,
                                        "termination_reason": trial.termination_reason})
    seen: dict[str, int] = {}
    for grader in grade.get("graders") or []:
        if not isinstance(grader, dict) or not isinstance(grader.get("passed"), bool):
            continue
        name = str(grader.get("name") or "grader")
        seen[name] = seen.get(name, 0) + 1
        label = f"grader/{name}" + (f"#{seen[name]}" if seen[name] > 1 else "")
        detail = {k: v for k, v in grader.items() if k not in ("name", "passed") and v is not None}
        reasons = grader.get("reasons")
        note = grader.get("note") or ("\n".join(r for r in reasons if isinstance(r, str))
                                      if isinstance(reasons, list) else None)
        scores[label] = _score(grader["passed"], note if isinstance(note, str) and note else None, detail or None)
    return scores


def _error(trial: TrialResult, trajectory: dict[str, Any]) -> dict[str, str] | None:
    """How a trial that has no outcome the model answers for ended (error, aborted, interrupted)."""
    if trial.status not in ("error", "aborted", "interrupted"):
        return None
    termination = trajectory.get("termination") if isinstance(trajectory.get("termination"), dict) else {}
    detail = str(termination.get("detail") or "") if termination else ""
    message = f"{trial.status}: {trial.termination_reason}" + (f": {detail}" if detail else "")
    return {"message": message, "traceback": "", "traceback_ansi": ""}


def _first_user(chat: list[dict[str, Any]]) -> str:
    return next((m["content"] for m in chat if m["role"] == "user" and isinstance(m["content"], str)), "")


def _last_assistant(chat: list[dict[str, Any]]) -> str:
    for message in reversed(chat):
        if message["role"] == "assistant":
            content = message["content"]
            return content if isinstance(content, str) else _text([p for p in content if p.get("type") == "text"])
    return ""


def sample(trial: TrialResult, line: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """One trial as an inspect ``EvalSample`` (its files read here; a damaged one raises a located error)."""
    trajectory = trial.trajectory() or {}
    metrics = trial.metrics() or {}
    sample_id, epoch = trial.task_id, trial.index + 1
    chat = messages(trajectory, trial.plan_key, f"{sample_id}-{epoch}")
    model_usage: dict[str, Any] = {}
    agent = _usage(line.get("usage"), trial.total_tokens, trial.cost_usd)
    if agent is not None:
        model_usage[trial.plan_key] = agent
    user = _usage(line.get("user_usage"), trial.user_total_tokens, trial.user_cost_usd)
    if user is not None:
        model_usage[USER_SIMULATOR] = user
    completion = _last_assistant(chat)
    scores = _scores(trial, metrics.get("grade"))
    if VERDICT_SCORE in scores and completion:
        scores[VERDICT_SCORE]["answer"] = completion  # the viewer's "answer" column, as inspect's scorers fill it
    out: dict[str, Any] = {
        "id": sample_id, "epoch": epoch, "input": _first_user(chat), "target": "",
        "messages": chat,
        "output": {"model": trial.plan_key, "choices": [], "completion": completion},
        "scores": scores,
        "metadata": row,
        "store": {}, "events": [], "model_usage": model_usage, "role_usage": {}, "attachments": {},
    }
    wall = metrics.get("wall_s")
    if isinstance(wall, (int, float)) and math.isfinite(wall):
        out["total_time"] = round(float(wall), 3)
    if trial.turns:
        out["turn_count"] = trial.turns
    error = _error(trial, trajectory)
    if error is not None:
        out["error"] = error
    cleaned: dict[str, Any] = _clean(out)
    return cleaned


def summary(sample_data: dict[str, Any]) -> dict[str, Any]:
    """The viewer's list entry for a sample (``EvalSampleSummary``)."""
    keys = ("id", "epoch", "input", "target", "metadata", "scores", "model_usage", "role_usage", "total_time",
            "turn_count")
    out = {k: sample_data[k] for k in keys if k in sample_data}
    if "error" in sample_data:
        out["error"] = sample_data["error"]["message"]
    out["completed"] = sample_data.get("error") is None or not str(sample_data["error"]["message"]).startswith(
        "interrupted")
    out["message_count"] = len(sample_data["messages"])
    return out


def _results(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The eval's scores: accuracy (passed / graded) for the verdict and for each grader."""
    names: list[str] = []
    for s in samples:
        for name in s["scores"]:
            if name not in names:
                names.append(name)
    names.sort(key=lambda n: (n != VERDICT_SCORE, n))
    scores = []
    for name in names:
        values = [s["scores"][name]["value"] for s in samples if name in s["scores"]]
        entry: dict[str, Any] = {"name": name, "scorer": name, "scored_samples": len(values),
                                 "unscored_samples": len(samples) - len(values), "params": {}, "metrics": {}}
        if values:
            accuracy = sum(1 for v in values if v == "C") / len(values)
            entry["metrics"]["accuracy"] = {"name": "accuracy", "value": accuracy, "params": {}}
        scores.append(entry)
    return {"total_samples": len(samples), "completed_samples": sum(1 for s in samples if "error" not in s),
            "scores": scores}


def _status(run: LoadedRun, trials: tuple[TrialResult, ...]) -> str:
    if run.manifest.ended_at is None and run.manifest.started_at is not None:
        return "started"
    if run.manifest.interrupted or any(t.status == "interrupted" for t in trials):
        return "cancelled"
    return "success"


def _eval_id(run: LoadedRun, column: Column) -> str:
    """A stable id per run and plan (exporting twice gives the same log)."""
    return hashlib.sha256(f"{run.run_id or run.label}\0{column.plan_key}".encode()).hexdigest()[:22]


def eval_log(run: LoadedRun, column: Column, row: Row, version: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The log's header (an ``EvalLog`` without samples) and its samples, for one plan of ``run``."""
    lines = {line["key"]: line for line in run.lines}
    samples = [sample(t, lines.get(t.key, {}), row(t, column)) for t in column.trials]
    usage: dict[str, dict[str, Any]] = {}
    for s in samples:
        for model, values in s["model_usage"].items():
            _add_usage(usage, model, values)
    m = run.manifest
    created = _utc(m.started_at) or datetime(1970, 1, 1, tzinfo=UTC).isoformat()
    settings = m.settings
    task_ids = sorted({t.task_id for t in column.trials})
    packs = sorted({t.task_pack for t in column.trials if t.task_pack})
    spec: dict[str, Any] = {
        "eval_id": _eval_id(run, column), "run_id": run.run_id or "", "created": created,
        "task": run.label, "task_id": run.label, "task_version": 0,
        "task_attribs": {}, "task_args": {}, "task_args_passed": {}, "solver_args_passed": {},
        "dataset": {"name": ", ".join(packs) or run.label, "samples": len(task_ids), "sample_ids": task_ids},
        "model": column.plan_key, "model_generate_config": {}, "model_args": {},
        "config": {"epochs": settings.trials} if settings is not None else {},
        "packages": {"capplan": version},
        "metadata": {"capplan": {"run": run.label, "run_id": run.run_id, "plan_key": column.plan_key,
                                 "plan_fingerprint": column.fingerprint,
                                 "effective_presets": list(column.effective_presets),
                                 "user_plan_fingerprint": settings.user_plan_fingerprint if settings else None,
                                 "command": list(m.command or [])}},
    }
    plan = {"name": "capplan", "steps": [], "config": {}}
    stats = {"started_at": created, "completed_at": _utc(m.ended_at) or "", "model_usage": _finish_usage(usage),
             "role_usage": {}, "connection_limit_history": []}
    header: dict[str, Any] = _clean({"version": LOG_VERSION, "status": _status(run, column.trials), "eval": spec,
                                     "plan": plan, "results": _results(samples), "stats": stats,
                                     "invalidated": False, "tags": [], "metadata": {}})
    return header, samples


def _member(archive: zipfile.ZipFile, name: str, data: Any) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    body = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    archive.writestr(info, body)


def eval_file(header: dict[str, Any], samples: list[dict[str, Any]]) -> bytes:
    """The ``.eval`` zip: start journal, samples, summaries, header (the order inspect writes them in)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _member(archive, "_journal/start.json", {"version": header["version"], "eval": header["eval"],
                                                 "plan": header["plan"]})
        for s in samples:
            _member(archive, f"samples/{s['id']}_epoch_{s['epoch']}.json", s)
        _member(archive, "summaries.json", [summary(s) for s in samples])
        _member(archive, "header.json", header)
    return buffer.getvalue()
