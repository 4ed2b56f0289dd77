"""Headless Chromium for the report's browser tests.

Skipped when Chromium, its driver or Selenium is missing, unless ROEMBED_BROWSER_TESTS=require
(set by .ci/run), which turns the skip into a failure so CI cannot pass without running them.
"""
import os

import pytest

from roembed.report import browser
from roembed.report.browser import CELL_POSITION, DEEP_TEXT, OBJECT_POSITION, click_at, model_data, open_report, \
    requests_made  # noqa: F401  (re-exported for the tests)


def start_chrome(width: int = 1400, height: int = 1300):
    """A headless Chromium session, or skip (fail under ROEMBED_BROWSER_TESTS=require)."""
    try:
        return browser.start_chrome(width, height)
    except browser.NoBrowser as exc:
        if os.environ.get("ROEMBED_BROWSER_TESTS") == "require":
            pytest.fail(f"browser tests required (ROEMBED_BROWSER_TESTS=require) but {exc}")
        pytest.skip(str(exc))
