"""``capplan trial view`` opened in headless Chromium: click a matrix cell, filter, read the trial; nothing hostile runs.

Screenshots of the matrix and of one trial are saved under the test's tmp folder; with
``CAPPLAN_SCREENSHOTS=DIR`` they are also copied to DIR (the docs' images:
``CAPPLAN_SCREENSHOTS=docs/img .venv/bin/python -m pytest -q tests/trials/results/test_view_browser.py``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from capplan.trials.report.run_data import load_run
from capplan.trials.report.view.write import render_runs
from tests.trials.results import browser
from tests.trials.results.hostile_runs import HOSTILE, TASKS, HostileRuns, with_second_trials
from tests.cli_runner import invoke

pytestmark = pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))

REPO = Path(__file__).resolve().parents[3]
#: what the page shows for HOSTILE: every control character made visible, the ESC as ␛
SHOWN = HOSTILE.replace("\x1b", "\u241b").replace("\x07", "\\x07")


def visible(text: str) -> str:
    """What the page's visible() shows for ``text``: the ESC as ␛, other control characters as \\xNN."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]",
                  lambda m: "\u241b" if m.group() == "\x1b" else f"\\x{ord(m.group()):02x}", text)


@pytest.fixture(scope="module")
def page(hostile_runs: HostileRuns, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "report.html"
    result = invoke("trial", "view", *map(str, hostile_runs.paths), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with browser.chromium(tmp_path_factory.mktemp("chromium")) as session:
        yield session


def open_page(driver: Any, path: Path) -> None:
    driver.get(path.resolve().as_uri())
    browser.wait_for(driver, "body[data-ready='1']")


def not_pwned(driver: Any) -> None:
    assert driver.execute_script("return window.__pwned === undefined") is True
    assert driver.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0
    hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))")
    assert all(h == "#" or re.fullmatch(r"#(trial-\d+|diff-\d+-\d+)", h) for h in hrefs), hrefs


def save(driver: Any, name: str, folder: Path) -> None:
    path = folder / name
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 0
    target = os.environ.get("CAPPLAN_SCREENSHOTS")
    if target:
        destination = Path(target) if Path(target).is_absolute() else REPO / target
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination / name)


def cells(driver: Any) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, "#matrix a.cell"))


def test_matrix_cell_opens_the_trial_and_its_conversation(page: Path, driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    open_page(driver, page)
    not_pwned(driver)
    assert len(cells(driver)) == 2 * len(TASKS)
    stats = driver.find_element(By.ID, "stats").text
    assert "agent-a" in stats and "91.7 %" in stats and "8.3 %" in stats
    assert driver.find_element(By.ID, "shown-count").text == f"{2 * len(TASKS)} of {2 * len(TASKS)} trials shown"
    driver.execute_script("document.getElementById('stats-section').scrollIntoView()")
    save(driver, "trial-view-matrix.png", tmp_path)

    row = driver.find_element(By.CSS_SELECTOR, "#matrix tr[data-task='t00']")
    a_cell, b_cell = row.find_elements(By.CSS_SELECTOR, "a.cell")
    assert "o-failed" in a_cell.get_attribute("class") and "o-passed" in b_cell.get_attribute("class")
    b_cell.click()
    title = browser.wait_for(driver, "#trial-title")
    assert title.text == "trial agent-b/t00/0"
    assert driver.find_element(By.ID, "trial-outcome").text == "passed"
    assert driver.find_element(By.ID, "overview").is_displayed() is False
    chat = driver.find_element(By.ID, "chat")
    bubbles = chat.find_elements(By.CSS_SELECTOR, ".msg")
    roles = [b.get_attribute("data-role") for b in bubbles]
    assert roles[:4] == ["user", "agent", "tool", "agent"]
    assert bubbles[0].find_element(By.CSS_SELECTOR, "pre").get_attribute("textContent") == SHOWN
    call = bubbles[1].text
    assert "tool call add" in call and '"amount": 2' in call and '"memo"' in call
    long_result = bubbles[2].find_element(By.CSS_SELECTOR, "details.long")
    assert long_result.get_attribute("open") is None  # collapsed past the length …
    assert "END-OF-OUTPUT" in long_result.find_element(By.CSS_SELECTOR, "pre").get_attribute("textContent")  # … but whole
    long_result.find_element(By.TAG_NAME, "summary").click()
    assert long_result.find_element(By.CSS_SELECTOR, "pre").is_displayed()
    assert "agent says " + SHOWN in bubbles[3].text.replace("\n", "") or \
        bubbles[3].find_element(By.CSS_SELECTOR, "pre").get_attribute("textContent") == "agent says " + SHOWN
    grade = driver.find_element(By.ID, "grade").text
    assert "verdict: passed" in grade and "expected_state" in grade
    checkpoints = driver.find_elements(By.CSS_SELECTOR, ".checkpoint-table tbody tr")
    assert [row.find_element(By.TAG_NAME, "td").text for row in checkpoints] == ["0", "1"]  # one per user turn
    state = checkpoints[0].find_element(By.CSS_SELECTOR, "details pre").get_attribute("textContent")
    assert '"value": 2' in state
    assert "END-OF-OUTPUT" in checkpoints[0].get_attribute("textContent")  # the turn's tool output, whole
    calls = driver.find_elements(By.CSS_SELECTOR, ".calls-table tbody tr")
    assert len(calls) == 3  # the agent's turn with the tool call, its answer, the answer after "thanks"
    not_pwned(driver)
    save(driver, "trial-view-trial.png", tmp_path)

    driver.find_element(By.ID, "back").click()
    browser.wait_for(driver, "#matrix a.cell")
    assert driver.find_element(By.ID, "overview").is_displayed()


def _open_trial(driver: Any, i: int, key: str) -> None:
    """Route the page to trial ``i`` and wait until its title is there."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("location.hash = arguments[0]", f"#trial-{i}")
    WebDriverWait(driver, browser.WAIT_S).until(lambda d: d.execute_script(
        "const t = document.getElementById('trial-title'); return t && t.textContent") == f"trial {key}")


def _folded(driver: Any, css: str) -> list[tuple[str, str]]:
    return [(s, p) for s, p in driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(function (d) {"
        " return [d.querySelector(':scope > summary').textContent, d.querySelector('pre').textContent]; })", css)]


def test_every_section_of_every_page_shows_its_values(page: Path, driver: Any) -> None:
    """The run page, the matrix and every trial's page read section by section against the data the page holds.

    No section may show a JavaScript value as text ("[object …]", "undefined", "NaN", a bare
    "null") or be empty; each trial's "other recorded fields", transcript, grader reasons, calls
    and checkpoints show one entry per recorded item, with its value.
    """
    from selenium.webdriver.common.by import By

    open_page(driver, page)
    assert browser.text_problems(driver, "#overview") == []
    index = driver.execute_script("return JSON.parse(document.getElementById('view-index').textContent)")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#run-cards .run-card")) == len(index["runs"]) == 2
    assert len(driver.find_elements(By.CSS_SELECTOR, "#stats tbody tr")) == len(index["columns"]) == 2
    assert len(driver.find_elements(By.CSS_SELECTOR, "#matrix tbody tr")) == len(index["tasks"]) == len(TASKS)
    key_field = index["trial_fields"].index("key")
    reasons_seen = 0
    for i, trial in enumerate(index["trials"]):
        key = trial[key_field]
        _open_trial(driver, i, key)
        assert browser.text_problems(driver, "#trial") == [], key
        detail = driver.execute_script("return JSON.parse(document.getElementById('d-' + arguments[0]).textContent)", i)
        # fields the page has no section of its own for: one folded block each, holding the value
        other = {**(detail.get("trajectory_other") or {}), **(detail.get("metrics_other") or {})}
        assert other, key  # every trial of these runs records some (usage, cost source, wall time…)
        shown = _folded(driver, "#other-fields > details.other-field")
        assert sorted(name for name, _ in shown) == sorted(other), key
        for name, text in shown:
            value = other[name]
            assert (text == visible(value)) if isinstance(value, str) else json.loads(text) == value, (key, name)
        # the transcript: one bubble per message, each with its text
        messages = detail["messages"]
        bubbles = driver.find_elements(By.CSS_SELECTOR, "#chat .msg:not(.guard)")
        assert len(bubbles) == len(messages) > 0, key
        for message, bubble in zip(messages, bubbles):
            if isinstance(message.get("content"), str) and message["content"]:
                assert visible(message["content"]) in bubble.get_attribute("textContent"), (key, message["role"])
        # the grade: one row per grader, its name, verdict and every reason
        graders = detail["grade"]["graders"]
        rows = driver.find_elements(By.CSS_SELECTOR, ".grade-table tbody tr")
        assert len(rows) == len(graders) > 0, key
        for grader, row in zip(graders, rows):
            cells = [td.get_attribute("textContent") for td in row.find_elements(By.CSS_SELECTOR, ":scope > td")]
            assert cells[:2] == [grader["name"], "passed" if grader["passed"] else "failed"], key
            reasons = [li.get_attribute("textContent") for li in row.find_elements(By.CSS_SELECTOR, "ul.reasons li")]
            assert reasons == [visible(r) for r in grader["reasons"]], key
            reasons_seen += len(reasons)
        assert len(driver.find_elements(By.CSS_SELECTOR, ".calls-table tbody tr")) == len(detail["calls"]) > 0
        assert len(driver.find_elements(By.CSS_SELECTOR, ".checkpoint-table tbody tr")) == len(detail["checkpoints"])
    assert reasons_seen == 12  # agent-a fails t00, agent-b every task but t00: one reason each
    not_pwned(driver)


def test_pass_hat_k_says_how_many_tasks_it_covers(hostile_runs: HostileRuns, driver: Any, tmp_path: Path) -> None:
    """Two trials of each of 12 tasks, one of t03's aborted: the stats row shows pass^2 over the other 11."""
    from selenium.webdriver.common.by import By

    run = with_second_trials(hostile_runs.a.out, tmp_path / "run", aborted="t03")
    page = tmp_path / "view.html"
    assert invoke("trial", "view", str(run), "--out", str(page)).exit_code == 0
    open_page(driver, page)
    [row] = driver.find_elements(By.CSS_SELECTOR, "#stats tbody tr")
    cells = [td.get_attribute("textContent") for td in row.find_elements(By.TAG_NAME, "td")]
    head = [th.get_attribute("textContent") for th in driver.find_elements(By.CSS_SELECTOR, "#stats thead th")]
    assert cells[head.index("pass^k")] == "^1 91.7 %, ^2 90.9 % (11 of 12 tasks)"  # by name: columns get added
    assert browser.text_problems(driver, "#overview") == []
    assert driver.find_elements(By.ID, "compare-section") == []  # one model: nothing to compare


def test_filters_work_without_a_server(page: Path, driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_page(driver, page)
    driver.find_element(By.ID, "f-outcome-passed").click()
    assert driver.find_element(By.ID, "shown-count").text == f"12 of {2 * len(TASKS)} trials shown"
    assert {c.get_attribute("class") for c in cells(driver)} == {"cell o-failed"}
    driver.find_element(By.ID, "f-outcome-passed").click()
    search = driver.find_element(By.ID, "f-search")
    search.send_keys("t03")
    assert [c.get_attribute("title").split(" ")[0] for c in cells(driver)] == ["agent-a/t03/0", "agent-b/t03/0"]
    search.clear()
    search.send_keys("agent-b/t0")
    assert len(cells(driver)) == 10
    search.clear()
    search.send_keys("x")  # clear() sends no input event: type and delete to reset the filter
    search.send_keys("\b")
    Select(driver.find_element(By.ID, "f-reason")).select_by_value("user_stop")
    assert len(cells(driver)) == 2 * len(TASKS)
    Select(driver.find_element(By.ID, "f-pack")).select_by_value("desk")
    assert len(cells(driver)) == 2 * len(TASKS)
    assert [o.get_attribute("value") for o in Select(driver.find_element(By.ID, "f-pack")).options] == ["", "desk"]


def test_hostile_task_ids_model_keys_and_packs_are_shown_as_text(hostile_runs: HostileRuns, driver: Any,
                                                                 tmp_path: Path) -> None:
    """The loader refuses such names; the page must not depend on that, so it is fed them directly."""
    from selenium.webdriver.common.by import By

    run = load_run(hostile_runs.a.out)
    hostile = tuple(dataclasses.replace(t, task_id=f"{HOSTILE} {t.task_id}", task_pack=HOSTILE, plan_key=HOSTILE)
                    for t in run.trials)
    page = tmp_path / "hostile.html"
    page.write_text(render_runs([dataclasses.replace(run, trials=hostile, label=HOSTILE)]), encoding="utf-8")
    open_page(driver, page)
    not_pwned(driver)
    first = driver.find_element(By.CSS_SELECTOR, "#matrix tbody tr")
    pack, task = first.find_elements(By.TAG_NAME, "td")[:2]
    assert pack.get_attribute("textContent") == SHOWN and task.get_attribute("textContent") == f"{SHOWN} t00"
    assert driver.find_element(By.CSS_SELECTOR, "#matrix thead th:nth-child(3)").get_attribute("textContent") == SHOWN
    cells(driver)[0].click()
    assert browser.wait_for(driver, "#trial-title").get_attribute("textContent").startswith("trial agent-a/t00/0")
    not_pwned(driver)


def _benchmark() -> Any:
    spec = importlib.util.spec_from_file_location("trial_view_benchmark", REPO / "benchmarks" / "trial_view.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_page_of_1000_trials_opens_and_pages(driver: Any, tmp_path: Path) -> None:
    """Prints the page's load time (run with -s); asserts only on what is shown, never on time."""
    from selenium.webdriver.common.by import By

    # 2 models x 250 tasks x 2 trials: the matrix has two pages of rows
    run = _benchmark().write_synthetic_run(tmp_path / "run", 1000, models=2, trials_per_task=2)
    page = tmp_path / "view.html"
    result = invoke("trial", "view", str(run), "--out", str(page))
    assert result.exit_code == 0, result.output
    open_page(driver, page)
    assert browser.text_problems(driver, "#overview") == []
    timing = driver.execute_script(
        "const t = performance.getEntriesByType('navigation')[0]; return [t.domContentLoadedEventEnd, t.loadEventEnd];")
    print(f"\ntrial view of 1000 trials: {page.stat().st_size / 2**20:.1f} MB, DOMContentLoaded "
          f"{timing[0]:.0f} ms, load {timing[1]:.0f} ms (headless Chromium, file://)")
    assert driver.find_element(By.ID, "shown-count").text == "1000 of 1000 trials shown"
    rows = driver.find_elements(By.CSS_SELECTOR, "#matrix tbody tr")
    assert len(rows) == 200 and rows[0].get_attribute("data-task") == "task-00001"  # pack inventory first
    assert "tasks 1–200 of 250" in driver.find_element(By.ID, "pager").text
    driver.find_element(By.ID, "page-next").click()
    rows = driver.find_elements(By.CSS_SELECTOR, "#matrix tbody tr")
    assert len(rows) == 50 and rows[-1].get_attribute("data-task") == "task-00249"
    cells(driver)[-1].click()
    assert browser.wait_for(driver, "#trial-title").text == "trial model-b/task-00249/1"
    assert browser.text_problems(driver, "#trial") == []


def test_harness_turns_handoffs_guard_rejections_retries_and_waits_are_marked(hostile_runs: HostileRuns, driver: Any,
                                                                             tmp_path: Path) -> None:
    """The loop's own records, added to one real trial as the loop writes them, each shown for what it is."""
    import yaml
    from selenium.webdriver.common.by import By

    run = tmp_path / "run"
    shutil.copytree(hostile_runs.a.out, run)
    folder = run / "trials" / "agent-a" / "t05" / "0"
    trajectory = yaml.safe_load((folder / "trajectory.yaml").read_text())
    trajectory["messages"][1:1] = [
        {"role": "user", "content": "Your tool call's arguments were not valid JSON; call it again.",
         "origin": "parser_feedback"},
        {"role": "system", "content": "Context summarized before turn 2: the user wants 2 added.", "origin": "summary"},
    ]
    trajectory["user_reply_guard_events"] = [{"message_index": 0, "outcome": "regenerated",
                                              "rejections": ["role_flip: the reply speaks as the agent"]}]
    trajectory["retries"] = [{"retry_class": "empty_completion", "turn": 1, "attempt": 1, "detail": "no content"}]
    (folder / "trajectory.yaml").write_text(yaml.safe_dump(trajectory, sort_keys=False))
    metrics = yaml.safe_load((folder / "metrics.yaml").read_text())
    metrics["calls"][0].update(wait_s=1.5, attempt=2, error_class=None, gateway_route="openai/agent-model",
                               gateway_route_kind="exact", openrouter_generation_id="gen-123", cost_usd=0.00042)
    metrics["calls"].insert(0, {**metrics["calls"][0], "status": "error", "outcome": "failed", "attempt": 1,
                                "error_class": "rate_limit", "error_type": "RateLimitError", "wait_s": 0.0})
    (folder / "metrics.yaml").write_text(yaml.safe_dump(metrics, sort_keys=False))
    page = tmp_path / "view.html"
    assert invoke("trial", "view", str(run), "--out", str(page)).exit_code == 0
    open_page(driver, page)
    driver.find_element(By.CSS_SELECTOR, "#matrix tr[data-task='t05'] a.cell").click()
    browser.wait_for(driver, "#chat")
    guard = driver.find_element(By.CSS_SELECTOR, "#chat .msg.guard")
    # the "who" line is upper-cased by the style sheet: compared case-blind
    assert "reply guard: regenerated" in guard.text.lower() and "role_flip" in guard.text
    feedback = driver.find_element(By.CSS_SELECTOR, "#chat .msg.feedback")
    assert "harness feedback (parser_feedback)" in feedback.text.lower()
    summary = driver.find_element(By.CSS_SELECTOR, "#chat .msg.summary")
    assert "context handoff summary" in summary.text.lower() and "the user wants 2 added" in summary.text
    retries = driver.find_element(By.ID, "retries").text
    assert "retry empty_completion at turn 1, attempt 1: no content" in retries
    assert "waited 1.500 s before attempt 2" in retries and "failed: rate_limit (RateLimitError)" in retries
    first, second = driver.find_elements(By.CSS_SELECTOR, ".calls-table tbody tr")[:2]
    assert "rate_limit (RateLimitError)" in first.text
    assert "openai/agent-model (exact)" in second.text and "gen-123" in second.text and "$0.000420" in second.text
    assert browser.text_problems(driver, "#trial") == []
    not_pwned(driver)


# -- the comparison of two runs or models ------------------------------------------------

def _rows(driver: Any, css: str) -> list[list[str]]:
    """The text of every body cell of the table at ``css``, read in one round trip."""
    rows = driver.execute_script("return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map("
                                 "r => Array.from(r.children).map(td => td.textContent))", css)
    assert isinstance(rows, list)
    return rows


def test_the_comparison_shows_trial_report_s_verdict_the_figures_and_the_flips(
        hostile_runs: HostileRuns, page: Path, driver: Any, tmp_path: Path) -> None:
    """Two runs: the comparison section (test_view_compare checks the data it draws from)."""
    from selenium.webdriver.common.by import By

    open_page(driver, page)
    not_pwned(driver)
    assert browser.text_problems(driver, "#compare-section") == []
    verdict = driver.find_element(By.CSS_SELECTOR, "#pairs .verdict").get_attribute("textContent")
    printed = invoke("trial", "report", *hostile_runs.paths)
    assert printed.exit_code == 0 and f"- {verdict}" in printed.output.splitlines(), printed.output
    assert verdict == "agent-a better than agent-b: +83 pp, p = 0.006, 12 paired tasks"
    index = driver.execute_script("return JSON.parse(document.getElementById('view-index').textContent)")
    rows = _rows(driver, "#compare-columns")
    columns = index["comparison"]["columns"]
    assert len(rows) == len(columns) == 2
    for cells, column in zip(rows, columns, strict=True):
        assert cells[0] == column["label"] and cells[2] == str(len(TASKS))
        assert cells[4] == f"unknown ({len(TASKS)} unknown)"  # the plans have no price: never $0
        assert cells[6] == f"{column['tokens']['mean']:.1f}" and cells[8] == f"{column['latency_s']['mean']:.3f}"
    assert [cells[3] for cells in rows] == ["91.7 % (11 / 12)", "8.3 % (1 / 12)"]
    flips = _rows(driver, "#pairs table.flips")
    assert [cells[1] for cells in flips] == TASKS
    assert [cells[4:6] for cells in flips] == [["failed", "passed"]] + [["passed", "failed"]] * 11
    driver.execute_script("document.getElementById('compare-section').scrollIntoView()")
    save(driver, "trial-view-compare.png", tmp_path)
    # a flip's trial link opens that trial
    driver.find_elements(By.CSS_SELECTOR, "#pairs table.flips tbody tr:nth-child(4) a.flip-trial")[1].click()
    browser.wait_for(driver, "#trial-title")
    assert driver.find_element(By.ID, "trial-title").text == "trial agent-b/t03/0"
    assert driver.find_element(By.ID, "trial-outcome").text == "failed"


def test_a_flipped_task_shows_both_conversations_with_the_first_difference_marked(
        page: Path, driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    open_page(driver, page)
    driver.find_elements(By.CSS_SELECTOR, "#pairs a.diff-link")[0].click()
    browser.wait_for(driver, "#diff-title")
    assert driver.find_element(By.ID, "diff").is_displayed() and not driver.find_element(By.ID, "overview").is_displayed()
    assert driver.find_element(By.ID, "diff-title").text == "task t00 (trial 0): two conversations"
    assert driver.find_element(By.ID, "diverge-summary").text == \
        "they are the same up to message 1; message 2 is the first that differs (marked)"
    marked = driver.find_elements(By.CSS_SELECTOR, ".sides .msg.diverge")
    assert [m.get_attribute("data-at") for m in marked] == ["1", "1"]
    assert [m.get_attribute("data-role") for m in marked] == ["agent", "agent"]
    assert all(m.find_element(By.CSS_SELECTOR, ".diverge-mark").text == "first difference" for m in marked)
    a, b = (m.find_element(By.CSS_SELECTOR, ".call pre").get_attribute("textContent") for m in marked)
    assert '"amount": 1' in a and '"amount": 2' in b  # t00: B passed it by adding 2
    assert [m.get_attribute("data-at") for m in driver.find_elements(By.CSS_SELECTOR, "#side-a .msg.same")] == ["0"]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#chat-a .msg")) == len(driver.find_elements(By.CSS_SELECTOR, "#chat-b .msg")) > 2
    assert browser.text_problems(driver, "#diff") == []
    not_pwned(driver)
    save(driver, "trial-view-side-by-side.png", tmp_path)
    driver.find_element(By.CSS_SELECTOR, "#side-b a[href^='#trial-']").click()
    WebDriverWait(driver, browser.WAIT_S).until(lambda d: d.find_element(By.ID, "trial").is_displayed())
    assert driver.find_element(By.ID, "trial-title").text == "trial agent-b/t00/0"
    # a hand-typed pair that is no flip of this page says so
    driver.get(page.resolve().as_uri() + "#diff-0-1")
    browser.wait_for(driver, "body[data-ready='1']")
    assert "no flipped task pairs trials 0 and 1" in driver.find_element(By.ID, "diff").text
