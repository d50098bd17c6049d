"""A real headless browser for the report.html tests: Debian's chromium and its chromedriver (scripts/setup.sh installs
both), driven by selenium. Where they are missing the tests that need them are reported skipped with the reason,
never passed. Screenshots go to .cache/test-artifacts/ (ignored by git)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / ".cache" / "test-artifacts"
CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium") if p and Path(p).exists()), None)
CHROMEDRIVER = next((p for p in (shutil.which("chromedriver"), "/usr/bin/chromedriver") if p and Path(p).exists()), None)


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]', done by scripts/setup.sh)"
    if CHROMIUM is None or CHROMEDRIVER is None:
        return ("Debian's chromium and chromium-driver are not installed (scripts/setup.sh installs them with apt-get; "
                "it says why when it could not)")
    return None


@pytest.fixture(scope="session")
def browser():
    reason = missing()
    if reason:
        pytest.skip(f"browser tests skipped: {reason}")
    driver = start_browser()
    yield driver
    driver.quit()


def start_browser():
    """Headless chromium under chromedriver (benchmarks/html_report.py uses it too)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(flag)
    # both paths given, so selenium never looks for a driver on the network
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    return driver


def open_page(driver, path: Path, timeout_s: float = 30.0) -> float:
    """Open a report.html from disk and wait until its script has drawn it; the seconds from navigation to drawn.
    Fails with the page's own error when its script could not draw the run."""
    started = time.monotonic()
    driver.get(path.resolve().as_uri())
    while time.monotonic() - started < timeout_s:
        ready, error = driver.execute_script(
            "return [document.body && document.body.getAttribute('data-ready'), "
            "document.body && document.body.getAttribute('data-error')]")
        if error:
            raise AssertionError(f"the page could not draw the run: {error}")
        if ready is not None:
            return time.monotonic() - started
        time.sleep(0.02)
    raise AssertionError(f"{path}: not drawn within {timeout_s} s")


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    return path
