"""Shared fixtures: where the test data is, a fresh store and session per test.

The tests stand in tiers, one folder each (docs/testing.md):

    tests/core/     the table's logic and the lifecycle on a fake root: no box, no web, no browser
    tests/box/      the buttons and the panel (gpiozero's mock pins, luma's devices)
    tests/web/      the phones' side: routes, streams, serving, secrecy
    tests/browser/  the pages in Chromium (Playwright) and axe-core
    tests/hub/      the club hub on a PostgreSQL server of its own
    tests/system/   the units, the image's card, whole processes killed

The helpers the tiers share (``box_support``, ``web_support``...) stay here,
beside this file, which puts this folder on the import path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from companion import hints

# Hypothesis's two clocks are wall-clock budgets: a 200 ms deadline per
# example and a "too slow" health check on drawing inputs.  Under emulation
# (arm64 on qemu-user) or beside another test worker one pause fails them
# with nothing wrong in the code; speed is the bench's to measure, not the
# suite's.  Loaded here, before any test module: a test's own @settings
# inherits it for what it does not set.
settings.register_profile("companion", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("companion")

# The same for FIGHT?'s hint: the box abandons a search after 20 s of wall
# clock (companion.hints.BUDGET_S), its process's start included, which a
# loaded machine stretches with nothing wrong.  A worker a test makes without
# a budget of its own gets this ceiling for a hung search instead; the budget
# itself is tested with budgets of its own (tests/box/test_hint_worker.py).
hints.BUDGET_S = 120.0

# The shared helpers, from any tier; and each tier's folder, since a few
# tests take a helper from a test module of another tier (the browser's
# pages from tests/web/test_pages.py...), as pytest itself imports them: by
# their file's name, which stays unique across the tiers.
_HERE = Path(__file__).resolve().parent
for _folder in (_HERE, *(_HERE / tier for tier in ("core", "box", "web", "browser", "hub", "system"))):
    sys.path.insert(0, str(_folder))

ROOT = Path(__file__).resolve().parents[1]
# The public replay samples, kept in the repository (see their README).
SCENARIOS = ROOT / "tests" / "data" / "scenarios"
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def store(tmp_path):
    from companion.store import Store

    s = Store(tmp_path / "data")
    yield s
    s.close()


@pytest.fixture
def session(store):
    from companion.session import TableSession

    return TableSession(store)


@pytest.fixture
def companion_cmd():
    """The installed ``companion`` command (the venv's), as a list for subprocess."""
    exe = Path(sys.executable).with_name("companion")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "appliance.cli"]


def pytest_collection_modifyitems(config, items):
    """The long tests (marked ``slow``) first: the suite runs on two workers
    (pyproject.toml's ``-n 2``), and a worker that met a three-minute test at
    the very end would leave the other idle for it.  The order is otherwise
    kept, and the same on every worker, as pytest-xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
