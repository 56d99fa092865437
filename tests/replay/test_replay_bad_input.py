"""Bad input: a clear one-line message, a recorded cell state, no traceback, nothing lost."""

from __future__ import annotations

import json

import pytest

from .fakes.chat import ChatProvider
from .helpers import FAKE_KEY, custom_run, prices_file, read_jsonl, row
from tests.cli_runner import invoke


def no_traceback(outcome) -> None:
    assert "Traceback" not in outcome.err + outcome.out


def states(out) -> dict[str, dict]:
    return {s["cell"]: s for s in read_jsonl(out / "cells.jsonl")}


@pytest.mark.parametrize("argv, message", [
    (["run", "--route", "nuos", "--models", "m", "--out", "{out}"],
     "unknown route 'nuos' (did you mean 'nous'?)"),
    (["run", "--route", "custom", "--models", "m", "--out", "{out}"], "--route custom needs --base-url"),
    (["run", "--route", "custom", "--base-url", "ftp://x", "--models", "m", "--out", "{out}"],
     "--base-url must be an http(s) URL"),
    (["run", "--route", "deepseek", "--models", "m", "--out", "{out}", "--variants", "reasoning_detail"],
     "--variants reasoning_detail not valid for a chat route"),
    (["run", "--route", "deepseek", "--models", "m", "--out", "{out}", "--want-direct", "m"],
     "--want-direct only applies to routes with lanes"),
    (["run", "--route", "deepseek", "--models", "m", "--out", "{out}", "--positions", "in_lop"],
     "--positions in_lop not valid"),
    (["run", "--route", "nous", "--models", "portal-max:cheap", "--out", "{out}"], "portal-max:<USD per 1M"),
    (["report", "--out", "{out}/missing"], "does not exist"),
    (["run", "--route", "deepseek", "--models", "m"], "the following arguments are required: --out"),
])
def test_usage_errors_exit_2_with_one_clear_line(harness, tmp_path, argv, message, home):
    if "portal-max:cheap" in argv:
        (home / ".hermes" / "auth.json").write_text('{"providers": {"nous": {"agent_key": "k-1234567"}}}')
        argv = argv + ["--base-url", "http://127.0.0.1:9/v1"]
    done = harness(*[a.replace("{out}", str(tmp_path / "out")) for a in argv])
    assert done.code == 2
    assert message in done.err
    no_traceback(done)


def test_missing_key_env_var_records_baseline_failed_and_resumes_once_set(serve, harness, tmp_path, monkeypatch, home):
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path)
    done = harness(*custom_run(server.base, out, prices, key_env="MISSING_API_KEY"))
    assert done.code == 2
    assert "MISSING_API_KEY is not set in the environment or in" in done.err and ".hermes/.env" in done.err
    no_traceback(done)
    assert server.posts() == []
    assert {(s["state"], s["final"]) for s in states(out).values()} == {("baseline-failed", False)}
    assert harness("report", "--out", out).code == 0
    assert row(out, "fake-model", "-")["verdict"] == "baseline-failed"
    # the key in ~/.hermes/.env is found on the next run, which measures every cell
    (home / ".hermes" / ".env").write_text(f'export MISSING_API_KEY="{FAKE_KEY}"\n')
    again = harness(*custom_run(server.base, out, prices, key_env="MISSING_API_KEY"))
    assert again.code == 0, again.err
    assert {s["state"] for s in states(out).values()} == {"done"}


def test_an_unreadable_hermes_env_file_is_a_located_error_without_its_values(serve, harness, tmp_path, home):
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path)
    # read by capplan's one .env reader: bytes that are not UTF-8 are placed by line and column
    (home / ".hermes" / ".env").write_bytes(f"OTHER={FAKE_KEY}\nMISSING_API_KEY=\xff\n".encode("latin-1"))
    done = harness(*custom_run(server.base, out, prices, key_env="MISSING_API_KEY"))
    assert done.code == 2
    assert f"MISSING_API_KEY cannot be read from {home / '.hermes' / '.env'}:2:17: the file is not UTF-8" in done.err
    assert FAKE_KEY not in done.err + done.out
    no_traceback(done)
    assert server.posts() == []


def test_unreachable_base_url_is_baseline_failed_then_resumable(serve, harness, tmp_path, monkeypatch, closed_port):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    out, prices = tmp_path / "out", prices_file(tmp_path)
    dead = f"http://127.0.0.1:{closed_port}/v1"
    done = harness(*custom_run(dead, out, prices))
    assert done.code == 1
    no_traceback(done)
    assert all(s["state"] == "baseline-failed" and not s["final"] for s in states(out).values())
    assert f"cannot connect to 127.0.0.1:{closed_port}: connection refused" in states(out)[
        "custom|fake-model|text|in_loop"]["reason"]
    harness("report", "--out", out)
    failed = row(out, "fake-model")
    assert failed["verdict"] == "baseline-failed" and "connection refused" in failed["notes"][0]
    live = serve(ChatProvider(key=FAKE_KEY))
    assert harness(*custom_run(live.base, out, prices)).code == 0
    harness("report", "--out", out)
    assert row(out, "fake-model")["verdict"] == "consumes-all-turns"


def test_non_json_response_is_recorded_not_raised(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY, non_json=True))
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path)))
    assert done.code == 1
    no_traceback(done)
    calls = [c for c in read_jsonl(out / "calls.jsonl") if c.get("step") == "params"]
    assert calls[0]["status"] == 200 and not calls[0]["ok"]
    assert calls[0]["error"].startswith("non-JSON response (HTTP 200, text/html)")
    assert all(s["state"] == "baseline-failed" for s in states(out).values())
    harness("report", "--out", out)
    assert row(out, "fake-model")["verdict"] == "baseline-failed"


def test_response_without_usage_is_baseline_failed_and_priced_at_worst_case(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY, no_usage=True))
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "text"))
    assert done.code == 0  # the provider answered; there is nothing a rerun could change
    no_traceback(done)
    text_states = [s for s in states(out).values() if s["step"] == "text"]
    assert all(s["state"] == "baseline-failed" and s["final"] and "no usage" in s["reason"] for s in text_states)
    assert {c["source"] for c in read_jsonl(out / "cost.jsonl")} == {"no-usage-worst-case"}
    harness("report", "--out", out)
    r = row(out, "fake-model")
    assert r["verdict"] == "baseline-failed" and "no usage" in r["notes"][0]


def test_zero_budget_sends_nothing_and_reports_not_measured(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path), "--budget", "0"))
    assert done.code == 1 and "budget reached" in done.err
    no_traceback(done)
    assert server.posts() == []
    assert {s["state"] for s in states(out).values()} == {"budget-exhausted"}
    harness("report", "--out", out)
    assert row(out, "fake-model", "-")["verdict"] == "not-measured"


def test_corrupt_calls_jsonl_is_reported_skipped_and_kept(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))
    out, prices = tmp_path / "out", prices_file(tmp_path)
    assert harness(*custom_run(server.base, out, prices, "--steps", "text")).code == 0
    calls = out / "calls.jsonl"
    good = calls.read_text()
    garbage = "this is not json\n[1, 2]\n{\"route\": \"custom\", \"model\": \"fake-mo"  # torn last line
    calls.write_text(good + garbage)
    done = harness(*custom_run(server.base, out, prices))  # adds the opaque cell
    assert done.code == 0, done.err
    no_traceback(done)
    assert "calls.jsonl line" in done.err and "skipped (left in the file)" in done.err
    text = calls.read_text()
    assert text.startswith(good + garbage + "\n")  # nothing lost; the next record starts a fresh line
    new = [json.loads(line) for line in text[len(good + garbage) + 1:].splitlines()]
    assert new and all(r["step"] in ("opaque_turn1", "opaque") for r in new)
    report = harness("report", "--out", out)
    assert report.code == 0 and "line" in report.err
    assert row(out, "fake-model")["verdict"] == "consumes-all-turns"
    assert "Problems met while reading the folder" in (out / "matrix.md").read_text()


def test_report_on_an_empty_folder_says_nothing_is_measured(harness, tmp_path):
    (tmp_path / "empty").mkdir()
    done = harness("report", "--out", tmp_path / "empty")
    assert done.code == 1 and "nothing measured yet" in done.err
    no_traceback(done)


def test_report_hints_name_the_command_the_user_typed(tmp_path, capsys):
    from capplan.evals.reasoning_replay.commands.cli import main as harness_main

    (tmp_path / "empty").mkdir()
    for folder in ("empty", "missing"):
        done = invoke("replay", "report", "--out", str(tmp_path / folder))
        assert done.exit_code in (1, 2) and "run `capplan replay run … --out" in done.stderr, done.stderr
        assert "harness.py" not in done.stderr
        assert harness_main(["report", "--out", str(tmp_path / folder)]) in (1, 2)
        assert "run `harness.py run … --out" in capsys.readouterr().err


class OddShape:
    """A 200 whose JSON is not shaped like a chat completion."""

    def handle(self, request):
        from tests.fake_provider import Reply

        return Reply(status=200, body={"id": "chatcmpl-1", "choices": [{"message": {"tool_calls": 7}}],
                            "usage": {"prompt_tokens": 10}})


def test_unreadable_response_shape_is_recorded_as_an_error(serve, harness, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(OddShape())
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path), "--steps", "text"))
    assert done.code == 1
    no_traceback(done)
    first = read_jsonl(out / "calls.jsonl")[0]
    assert not first["ok"] and first["error"].startswith("unexpected response shape (TypeError")
    assert read_jsonl(out / "cost.jsonl")[0]["source"] == "unreadable-worst-case"


def test_a_defect_in_one_cell_is_contained_and_logged(serve, harness, tmp_path, monkeypatch):
    from capplan.evals.reasoning_replay.run import scheduler

    monkeypatch.setenv("FAKE_KEY", FAKE_KEY)
    server = serve(ChatProvider(key=FAKE_KEY))

    def broken(ctx, model, cell):
        raise RuntimeError("simulated defect")

    monkeypatch.setattr(scheduler, "run_opaque_cell", broken)
    out = tmp_path / "out"
    done = harness(*custom_run(server.base, out, prices_file(tmp_path)))
    assert done.code == 1
    no_traceback(done)
    by_step = {s["step"]: s for s in states(out).values()}
    assert by_step["text"]["state"] == "done"
    assert by_step["opaque"]["state"] == "error" and not by_step["opaque"]["final"]
    assert "RuntimeError: simulated defect" in (out / "errors.log").read_text()
