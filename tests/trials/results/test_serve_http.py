"""``capplan trial view --serve`` over HTTP: what it lists and serves, what it refuses, live refresh, Ctrl-C.

One server per module, in this process, on a free port of 127.0.0.1, over a folder of copies of
the session's hostile runs (:mod:`tests.trials.results.serve_helpers`); requests go out through
``http.client`` so every request target is sent exactly as written (``..`` and its encodings
included). Nothing here sleeps: the live tests write into the folder and read the next answer.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from capplan.trials.report.compare import compare
from capplan.trials.report.run_data import load_runs
from capplan.trials.report.serve.catalog import MAX_RUNS
from capplan.trials.report.serve.server import LoopbackServer, serve_in_thread
from tests.cli_runner import invoke
from tests.trials.results.hostile_runs import TASKS, HostileRuns
from tests.trials.results.serve_helpers import B_NAME, Served, build_served, finish_trial, start_trial


@pytest.fixture(scope="module")
def served(hostile_runs: HostileRuns, tmp_path_factory: pytest.TempPathFactory) -> Served:
    return build_served(hostile_runs, tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(served: Served) -> Iterator[LoopbackServer]:
    srv, thread = serve_in_thread(served.root)
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def request(server: LoopbackServer, target: str, *, method: str = "GET", host: str | None = None
            ) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{server.port}")
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def get_json(server: LoopbackServer, path: str, **query: str) -> Any:
    status, headers, body = request(server, path + ("?" + urlencode(query) if query else ""))
    assert status == 200, body
    assert headers["content-type"].startswith("application/json")
    return json.loads(body)


def test_the_server_listens_on_127_0_0_1_only(server: LoopbackServer, served: Served) -> None:
    assert server.socket.getsockname()[0] == "127.0.0.1"
    assert server.url == f"http://127.0.0.1:{server.port}/"
    for address in ("0.0.0.0", "::", "", "localhost", "192.168.0.1"):
        with pytest.raises(ValueError, match="127.0.0.1 only"):
            LoopbackServer((address, 0), type("H", (), {}), None)  # type: ignore[arg-type]
    result = invoke("trial", "view", "--serve", served.root, "--host", "0.0.0.0")
    assert result.exit_code == 2 and "No such option '--host'" in result.output


def test_the_run_browser_lists_every_run_under_the_folder_and_nothing_outside(server: LoopbackServer) -> None:
    rows = {row["name"]: row for row in get_json(server, "/api/runs")["runs"]}
    # the link to a run outside is not followed; the run with a linked trial folder is listed, as unreadable
    assert set(rows) == {"a", B_NAME, "live", "linked-trial"}
    a = rows["a"]
    assert (a["models"], a["trials"], a["graded"], a["passed"], a["status"]) == (["agent-a"], 12, 12, 11, "finished")
    assert a["pass_rate"] == pytest.approx(11 / 12) and a["started_at"] and a["running"] == 0
    assert rows[B_NAME]["passed"] == 1
    bad = rows["linked-trial"]
    assert bad["status"] == "unreadable" and "link" in bad["problem"]
    assert MAX_RUNS >= 4


@pytest.mark.parametrize("target", [
    "/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd", "/a/run.json",
    "/a/trials/agent-a/t00/0/trajectory.yaml", "/api/run?run=../a", "/api/run?run=%2e%2e", "/api/run?run=linked",
    "/api/run?run=a/../a", "/api/run?run=/etc", "/api/run", "/api/run?run=a&run=a",
    "/trial?run=a&key=../../../../etc/passwd", "/trial?run=a&key=agent-a/t00/../../../run.json",
    "/trial?run=linked&key=agent-a/t00/0", "/trial?run=linked-trial&key=agent-a/t01/0",
    "/api/compare?run=linked", "/api/compare?run=..", "/api/diff?a_run=a&a_key=agent-a/t00/0&b_run=linked&b_key=agent-a/t00/0",
    "//etc/passwd", "/api/runs/../../etc/passwd", "/static/../../run.json",
])
def test_nothing_outside_the_catalog_is_served(server: LoopbackServer, target: str) -> None:
    status, _, body = request(server, target)
    assert status == 404, (target, body[:200])
    assert b"root:" not in body and b"capplan-trial-run" not in body


def test_hostile_requests_are_refused(server: LoopbackServer) -> None:
    # a page that rebinds its DNS name to 127.0.0.1 sends its own Host: it reads nothing
    assert request(server, "/api/runs", host="evil.example")[0] == 403
    assert request(server, "/api/runs", host=f"evil.example:{server.port}")[0] == 403
    assert request(server, "/api/runs", host=f"localhost:{server.port}")[0] == 200
    assert request(server, "/api/runs", method="POST")[0] == 405
    assert request(server, "/", method="DELETE")[0] == 405
    assert request(server, "/api/run?run=" + "a" * 5000)[0] == 414
    assert request(server, "/api/runs?" + "&".join(f"x{i}=1" for i in range(40)))[0] == 400
    status, headers, _ = request(server, "/", method="HEAD")
    assert status == 200 and headers["content-type"].startswith("text/html")


def test_pages_load_nothing_from_anywhere(server: LoopbackServer) -> None:
    status, headers, body = request(server, "/")
    assert status == 200
    assert "default-src 'none'" in headers["content-security-policy"]
    assert "connect-src 'self'" in headers["content-security-policy"]
    html = body.decode("utf-8")
    for needle in ("http://", "https://", "src=", "<link", "@import", "url("):
        assert needle not in html, needle
    status, headers, body = request(server, "/trial?" + urlencode({"run": "a", "key": "agent-a/t00/0"}))
    assert status == 200 and "default-src 'none'" in headers["content-security-policy"]
    # the static view's page of that one trial: its index and exactly one detail block
    page = body.decode("utf-8")
    assert 'id="view-index"' in page and 'id="d-0"' in page and 'id="d-1"' not in page
    assert "agent-a/t00/0" in page and "agent-a/t01/0" not in page


def test_a_run_s_trials_carry_every_sortable_field(server: LoopbackServer) -> None:
    data = get_json(server, "/api/run", run="a")
    assert len(data["trials"]) == len(TASKS) and data["running"] == []
    first = data["trials"][0]
    assert set(first) >= {"key", "outcome", "cost_usd", "tokens", "latency_s", "turns", "termination"}
    assert sorted(t["outcome"] for t in data["trials"]) == ["failed"] + ["passed"] * 11
    assert all(isinstance(t["tokens"], int) and t["turns"] == 3 for t in data["trials"])


def test_live_refresh_shows_running_trials_with_their_turn_then_the_finished_trial(
        server: LoopbackServer, served: Served) -> None:
    before = get_json(server, "/api/poll", run="live")
    assert before["trials"] == len(TASKS) and before["running"] == []
    rows = {row["name"]: row for row in get_json(server, "/api/runs")["runs"]}
    assert rows["live"]["status"].startswith("not ended")

    start_trial(served.live, "agent-a/t00/1", "exec-live-1", turn=0)
    start_trial(served.live, "agent-a/t00/1", "exec-live-1", turn=2)
    polled = get_json(server, "/api/poll", run="live")
    assert polled["version"] != before["version"]
    assert polled["running"] == [{"key": "agent-a/t00/1", "attempt": 1, "turn": 2, "sends": 2, "calls": 0}]
    assert {row["name"]: row for row in get_json(server, "/api/runs")["runs"]}["live"]["status"] == "running"

    # a line half written (no newline yet) waits for the rest of it
    whole = json.dumps({"kind": "send", "execution": "exec-live-2", "key": "agent-a/t01/1", "attempt": 1,
                        "send": {"request_id": "r", "role": "agent", "turn": 4}}).encode() + b"\n"
    with (served.live / "calls.jsonl").open("ab") as journal:
        journal.write(whole[:25])
    assert [r["key"] for r in get_json(server, "/api/poll", run="live")["running"]] == ["agent-a/t00/1"]
    with (served.live / "calls.jsonl").open("ab") as journal:
        journal.write(whole[25:])
    assert [(r["key"], r["turn"]) for r in get_json(server, "/api/poll", run="live")["running"]] == [
        ("agent-a/t00/1", 2), ("agent-a/t01/1", 4)]
    with (served.live / "calls.jsonl").open("ab") as journal:
        journal.write(b'{"kind": "lost", "execution": "exec-live-2", "key": "agent-a/t01/1", "attempt": 1}\n')

    finish_trial(served.live, "agent-a/t00/0", "agent-a/t00/1", "exec-live-1")
    after = get_json(server, "/api/poll", run="live")
    assert after["version"] != polled["version"] and after["running"] == [] and after["trials"] == len(TASKS) + 1
    run = get_json(server, "/api/run", run="live")
    assert "agent-a/t00/1" in [t["key"] for t in run["trials"]]


def test_the_comparison_gives_trial_report_s_verdict_figures_and_flips(
        server: LoopbackServer, served: Served) -> None:
    data = get_json(server, "/api/compare?" + urlencode([("run", "a"), ("run", B_NAME)]))
    printed = invoke("trial", "report", served.root / "a", served.root / B_NAME)
    assert printed.exit_code == 0, printed.output
    [pair] = data["pairs"]
    assert f"- {pair['verdict']}" in printed.output.splitlines()
    assert pair["verdict"].startswith("agent-a better than agent-b: +83 pp, p = 0.006")
    expected = compare(load_runs([served.root / "a", served.root / B_NAME])).pairs[0]
    assert pair["json"]["p_value"] == expected.p_value
    # every task flipped: A passed all but t00, B only t00
    assert [f["task"] for f in pair["flips"]] == TASKS
    assert [f["passed"] for f in pair["flips"]] == ["agent-b"] + ["agent-a"] * 11
    a, b = data["columns"]
    trials = get_json(server, "/api/run", run="a")["trials"]
    assert a["tokens"]["total"] == sum(t["tokens"] for t in trials) and a["tokens"]["unknown"] == 0
    latencies = [t["latency_s"] for t in trials]
    assert a["latency_s"]["mean"] == pytest.approx(sum(latencies) / len(latencies))
    assert a["cost_usd"]["unknown"] == len(TASKS)  # the plans have no price: unknown, never $0
    assert (a["pass_rate"], b["pass_rate"]) == (pytest.approx(11 / 12), pytest.approx(1 / 12))
    # one run with one model: nothing to pair, no error
    assert get_json(server, "/api/compare", run="a")["pairs"] == []


def test_side_by_side_marks_the_first_message_where_two_conversations_differ(server: LoopbackServer) -> None:
    data = get_json(server, "/api/diff", a_run="a", a_key="agent-a/t03/0", b_run=B_NAME, b_key="agent-b/t03/0")
    a, b = data["a"]["messages"], data["b"]["messages"]
    assert data["diverges_at"] == 1  # the same user turn, then A adds 2 and B adds 1
    assert a[0] == b[0] and a[0]["role"] == "user"
    assert json.loads(a[1]["calls"][0]["arguments"])["amount"] == 2
    assert json.loads(b[1]["calls"][0]["arguments"])["amount"] == 1
    same = get_json(server, "/api/diff", a_run="a", a_key="agent-a/t03/0", b_run="live", b_key="agent-a/t03/0")
    assert same["diverges_at"] is None


def test_ctrl_c_stops_the_command_with_exit_0_and_closes_the_socket(served: Served) -> None:
    port: list[int] = []
    done = threading.Event()

    def interrupt_once_serving() -> None:
        # the server answers only once it is in its serving loop: then Ctrl-C, as a terminal sends it;
        # never once the command has returned (the signal would reach the test run itself)
        for _ in range(500):
            if done.is_set():
                return
            for found in port or []:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", found, timeout=5)
                    conn.request("GET", "/api/runs", headers={"Host": f"127.0.0.1:{found}"})
                    if conn.getresponse().status == 200:
                        os.kill(os.getpid(), signal.SIGINT)
                        return
                except OSError:
                    pass
            if not port:
                with socket.socket() as probe:  # a free port, handed to the command
                    probe.bind(("127.0.0.1", 0))
                    port.append(probe.getsockname()[1])
            threading.Event().wait(0.02)

    helper = threading.Thread(target=interrupt_once_serving, daemon=True)
    helper.start()
    while not port:
        threading.Event().wait(0.01)
    result = invoke("trial", "view", "--serve", served.root, "--port", str(port[0]))
    done.set()
    helper.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert f"at http://127.0.0.1:{port[0]}/" in result.output
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port[0]), timeout=5):
        pass


def test_serve_refuses_what_it_cannot_do(served: Served, tmp_path: Path) -> None:
    two = invoke("trial", "view", "--serve", served.root / "a", served.root / B_NAME)
    assert two.exit_code == 2 and "one FOLDER" in two.output
    out = invoke("trial", "view", "--serve", served.root, "--out", tmp_path / "x.html")
    assert out.exit_code == 2 and "writes nothing" in out.output
    assert invoke("trial", "view", "--port", "8080", served.root / "a").exit_code == 2
    assert invoke("trial", "view").exit_code == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = invoke("trial", "view", "--serve", served.root, "--port", str(taken.getsockname()[1]))
    assert busy.exit_code == 2 and "--port" in busy.output and "Traceback" not in busy.output


def test_a_run_swapped_for_a_link_after_the_walk_is_not_followed(served: Served, tmp_path: Path) -> None:
    from capplan.trials.report.serve.catalog import Catalog

    shutil.copytree(served.root / "a", tmp_path / "top" / "swap", symlinks=True)
    catalog = Catalog(tmp_path / "top")
    assert list(catalog.names()) == ["swap"] and catalog.run("swap") is not None
    shutil.rmtree(tmp_path / "top" / "swap")
    (tmp_path / "top" / "swap").symlink_to(served.root / "a", target_is_directory=True)
    # whether the catalog still holds the walk from before the swap or walks again, no name leads through the link
    assert catalog.run("swap") is None and catalog.rows() == []
