"""``capplan trial view --serve`` in headless Chromium: the run browser, sorting, live refresh, a trial's URL, the comparison.

The server runs in this process on a free port of 127.0.0.1 over copies of the session's hostile
runs; every page's rendered text is swept for a JavaScript value shown as text (``[object``,
``undefined``, ``NaN``, a stray ``null``) and for empty sections. Screenshots are taken only for
``CAPPLAN_SCREENSHOTS=DIR`` (the docs' images:
``CAPPLAN_SCREENSHOTS=docs/img .venv/bin/python -m pytest -q tests/trials/results/test_serve_browser.py``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from capplan.trials.report.serve.server import LoopbackServer, serve_in_thread
from tests.trials.results import browser
from tests.trials.results.hostile_runs import TASKS, HostileRuns
from tests.trials.results.serve_helpers import B_NAME, Served, build_served, finish_trial, start_trial

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def served(hostile_runs: HostileRuns, tmp_path_factory: pytest.TempPathFactory) -> Served:
    return build_served(hostile_runs, tmp_path_factory.mktemp("serve-browser"))


@pytest.fixture(scope="module")
def base(served: Served) -> Iterator[str]:
    server: LoopbackServer
    server, thread = serve_in_thread(served.root)
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with browser.chromium(tmp_path_factory.mktemp("chromium-serve")) as session:
        yield session


def until(driver: Any, script: str, *args: Any) -> Any:
    """The value of ``script`` once it is truthy (at most the browser helper's bounded wait)."""
    from selenium.webdriver.support.ui import WebDriverWait

    # asked every 50 ms (not selenium's 500): the page changes within a poll of the server, and CI time counts
    return WebDriverWait(driver, browser.WAIT_S, poll_frequency=0.05).until(lambda d: d.execute_script(script, *args))


def texts(driver: Any, css: str) -> list[str]:
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent)", css))


def clean(driver: Any, css: str = "#app") -> None:
    assert browser.text_problems(driver, css) == []
    assert driver.execute_script("return window.__pwned === undefined") is True
    assert driver.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0


def save(driver: Any, name: str, folder: Path) -> None:
    """A screenshot for the docs, only when asked for (``CAPPLAN_SCREENSHOTS=DIR``): each costs a second of CI."""
    target = os.environ.get("CAPPLAN_SCREENSHOTS")
    if not target:
        return
    path = folder / name
    driver.save_screenshot(str(path))
    destination = Path(target) if Path(target).is_absolute() else REPO / target
    destination.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, destination / name)


def test_run_browser_sorting_and_live_refresh(driver: Any, base: str, served: Served, tmp_path: Path) -> None:
    driver.get(base)
    until(driver, "return document.querySelectorAll('#runs-table a.run-link').length === 4")
    shown = texts(driver, "#runs-table a.run-link")
    assert shown == ["a", "linked-trial", "live", B_NAME.replace("\x1b", "\u241b")]
    rows = driver.execute_script("return Array.from(document.querySelectorAll('#runs-table tbody tr')).map(r => r.textContent)")
    assert any("91.7 % (11 / 12)" in row and "finished" in row for row in rows)
    assert any("unreadable" in row for row in rows)
    clean(driver)
    save(driver, "serve-runs.png", tmp_path)

    driver.execute_script("location.hash = arguments[0]", "#/run?" + urlencode({"run": "a"}))
    until(driver, f"return document.querySelectorAll('#trials tbody tr').length === {len(TASKS)}")
    clean(driver)
    outcomes = "return Array.from(document.querySelectorAll('#trials tbody tr td:nth-child(5)')).map(e => e.textContent)"
    driver.find_element("css selector", "#trials th[data-key='outcome']").click()
    assert until(driver, outcomes) == ["failed"] + ["passed"] * 11
    driver.find_element("css selector", "#trials th[data-key='outcome']").click()
    assert until(driver, outcomes) == ["passed"] * 11 + ["failed"]
    driver.find_element("css selector", "#trials th[data-key='latency_s']").click()
    latencies = [float(v) for v in until(driver, outcomes.replace("nth-child(5)", "nth-child(8)"))]
    assert latencies == sorted(latencies)

    # live: a trial starts (the page shows it with its turn), then finishes (it joins the table)
    driver.execute_script("location.hash = arguments[0]", "#/run?" + urlencode({"run": "live"}))
    until(driver, f"return document.querySelectorAll('#trials tbody tr').length === {len(TASKS)}")
    start_trial(served.live, "agent-a/t05/1", "exec-browser-1", turn=1)
    running = until(driver, "const t = document.querySelector('#running tbody'); return t && t.textContent")
    assert running == "agent-a/t05/1" + "1" + "1" + "0"
    assert driver.find_element("id", "run-status").text == "running"
    clean(driver)
    finish_trial(served.live, "agent-a/t05/0", "agent-a/t05/1", "exec-browser-1")
    until(driver, f"return document.querySelectorAll('#trials tbody tr').length === {len(TASKS) + 1}")
    assert driver.execute_script("return document.getElementById('running')") is None
    assert "agent-a/t05/1" in texts(driver, "#trials a.trial-link")
    clean(driver)


def test_a_trial_has_a_url_of_its_own(driver: Any, base: str, tmp_path: Path) -> None:
    driver.get(base + "trial?" + urlencode({"run": "a", "key": "agent-a/t00/0"}) + "#trial-0")
    until(driver, "return document.getElementById('trial-title')")
    title = driver.find_element("id", "trial-title")
    assert title.text == "trial agent-a/t00/0"
    assert driver.find_element("id", "trial-outcome").text == "failed"
    clean(driver, "#trial")


def test_the_comparison_says_why(driver: Any, base: str, served: Served, tmp_path: Path) -> None:
    driver.get(base + "#/compare?" + urlencode([("run", "a"), ("run", B_NAME)]))
    until(driver, "return document.querySelector('#pairs .verdict')")
    verdict = driver.find_element("css selector", "#pairs .verdict")
    # the line trial report prints (test_serve_http holds the two equal)
    assert verdict.text == "agent-a better than agent-b: +83 pp, p = 0.006, 12 paired tasks"
    figures = driver.find_element("id", "columns").text
    assert "agent-a" in figures and "agent-b" in figures and "91.7 %" in figures and "8.3 %" in figures
    assert len(driver.find_elements("css selector", "#pairs table.flips tbody tr")) == len(TASKS)
    clean(driver)
    save(driver, "serve-compare.png", tmp_path)

    driver.find_elements("css selector", "#pairs a.diff-link")[3].click()  # task t03
    until(driver, "return document.querySelectorAll('.msg.diverge').length === 2")
    assert texts(driver, "#side-a .msg.diverge .who") == ["#2 assistant"]
    assert [e.get_attribute("data-at") for e in driver.find_elements("css selector", ".msg.diverge")] == ["1", "1"]
    assert "message 2 is the first that differs" in driver.find_element("id", "diverge-summary").text
    side_a = driver.find_element("id", "side-a").text
    side_b = driver.find_element("id", "side-b").text
    assert '"amount": 2' in side_a and '"amount": 1' in side_b
    clean(driver)
    save(driver, "serve-diff.png", tmp_path)
