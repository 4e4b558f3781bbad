"""Headless Chromium for the viewer tests (Debian's `chromium` + `chromium-driver`)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
]


def require_browser() -> None:
    """Skip (with the reason) when the browser or its driver is absent; CI installs both."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "chromium and chromedriver are needed (apt-get install chromium chromium-driver)"
        )


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium driven through chromedriver, with a fresh profile."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="scorer-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM or ""
        for flag in [*FLAGS, f"--user-data-dir={profile}"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def write_view(path: Path) -> Path:
    """`scorer view -o PATH` over the test's store; PATH, written."""
    from typer.testing import CliRunner

    from scorer.cli.main import app

    result = CliRunner().invoke(app, ["view", "-o", str(path)])
    assert result.exit_code == 0, result.stderr
    return path


def wait(driver: Any, condition: Any, timeout: float = 10) -> Any:
    """Wait until `condition(driver)` is truthy. A re-render can replace an element between
    finding it and reading it, and `css(...)[0]` before the element exists is an
    IndexError: both are asked again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException, IndexError)
    return WebDriverWait(driver, timeout, ignored_exceptions=ignored).until(condition)


def css(driver: Any, selector: str) -> list[Any]:
    """The elements `selector` matches (none: an empty list)."""
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)
