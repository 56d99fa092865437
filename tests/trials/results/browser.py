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
