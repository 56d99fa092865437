"""Headless Chromium through selenium, from Debian's ``chromium`` and ``chromium-driver`` packages.

Both paths are given explicitly, so Selenium Manager never runs and nothing is downloaded;
the driver process is started and stopped by the fixture that uses this. ``.ci/run`` installs
the packages; without them the browser tests are skipped, saying which file is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: every wait of the tests is bounded by this
WAIT_S = 30


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"{path} is missing: install Debian's {package} package (apt-get install -y chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the test extra: pip install -e '.[test]')"
    return None


@contextmanager
def chromium(download_dir: Path) -> Iterator[Any]:
    """A headless Chromium session, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", f"--user-data-dir={download_dir / 'profile'}"):
        options.add_argument(argument)
    service = Service(executable_path=str(CHROMEDRIVER), env={**os.environ, "HOME": str(download_dir)})
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.set_page_load_timeout(WAIT_S)
        driver.set_script_timeout(WAIT_S)
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, css: str) -> Any:
    """The first element matching ``css`` once it is there (at most :data:`WAIT_S`)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css)))


#: what a page must never show where a value belongs: a JavaScript value turned into text
_SWEEP = r"""
const root = document.querySelector(arguments[0]);
if (!root) return ["no element matches " + arguments[0]];
const problems = [];
// "null" is a value inside a JSON block (pre.code); anywhere else it is a value that was never formatted
const ALWAYS = /\[object |\bundefined\b|\bNaN\b/;
const OUTSIDE_JSON = /\bnull\b/;
function where(node) {
  const parts = [];
  for (let e = node; e && e !== root.parentElement; e = e.parentElement) {
    parts.unshift(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + String(e.className).split(" ").join(".") : ""));
  }
  return parts.slice(-4).join(" > ");
}
const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const text = n.nodeValue;
  const json = n.parentElement && n.parentElement.closest("pre.code");
  if (ALWAYS.test(text) || (!json && OUTSIDE_JSON.test(text))) problems.push(where(n.parentElement) + ": " + JSON.stringify(text.slice(0, 120)));
}
root.querySelectorAll("[title]").forEach(function (e) {
  const t = e.getAttribute("title");
  if (ALWAYS.test(t) || OUTSIDE_JSON.test(t)) problems.push(where(e) + " title: " + JSON.stringify(t.slice(0, 120)));
});
root.querySelectorAll("h3").forEach(function (h) {
  const next = h.nextElementSibling;
  if (!next || next.tagName === "H3" || !next.textContent.trim()) problems.push("section '" + h.textContent + "' shows nothing");
});
root.querySelectorAll("details").forEach(function (d) {
  const summary = d.querySelector(":scope > summary");
  const body = Array.from(d.childNodes).filter(function (c) { return c !== summary; }).map(function (c) { return c.textContent; }).join("");
  if (!summary || !summary.textContent.trim()) problems.push(where(d) + ": a folded block without a title");
  else if (!body.trim()) problems.push(where(d) + " '" + summary.textContent + "': folded block is empty");
});
root.querySelectorAll("table").forEach(function (t) {
  if (t.id !== "matrix" && t.querySelectorAll("tbody tr").length === 0) problems.push(where(t) + ": a table without rows");
});
return problems;
"""


def text_problems(driver: Any, css: str) -> list[str]:
    """Every place under ``css`` that shows a JavaScript value as text or an empty section (all of it, hidden parts too)."""
    problems = driver.execute_script(_SWEEP, css)
    assert isinstance(problems, list)
    return [str(p) for p in problems]
