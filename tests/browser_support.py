"""The one real browser every browser test module shares: a pytest plugin.

A module that drives chromium says ``pytest_plugins = ["browser_support"]``
after checking that the browser is there (tests/test_browser.py's skip
rules, which also name the browser and its flags).  Playwright's sync API
allows one instance at a time, so the session-scoped ``browser`` must be
defined once for the whole run, not once per module: loaded as a plugin,
it is.  Nothing is imported before the fixture is first used, so loading
this plugin never fails on a machine without a browser.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    from test_browser import ARGS, CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
