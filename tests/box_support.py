"""What the box tests share: mock pins, a box that counts presses, frame checks.

Used as a pytest plugin (``pytest_plugins = ["box_support"]`` in conftest),
so every test file gets the ``mock_factory`` and ``box`` fixtures.
"""

from __future__ import annotations

import time

import pytest

from hardware import Box
from hardware.testing import box_config


@pytest.fixture
def mock_factory():
    from gpiozero.pins.mock import MockFactory

    factory = MockFactory()
    yield factory
    factory.reset()           # after the box fixture closed its devices (gpiozero #578)


@pytest.fixture
def make_box(session, mock_factory):
    """``make(config=None, start=True, mock=True, pin_factory=<the mock>, **kw)``:
    boxes closed at the end, before the factory resets."""
    boxes = []

    def make(config=None, start=True, mock=True, pin_factory=mock_factory, **kwargs):
        box = Box(session, config or box_config(), mock=mock, pin_factory=pin_factory, **kwargs)
        boxes.append(box)
        if start:
            box.start()
        return box

    yield make
    for box in boxes:
        box.close()          # closes the Buttons before mock_factory resets


class MockTable:
    """A table of its own: a store in ``folder`` (``clock``: its wall clock),
    the table session and a started box on a ``MockFactory`` of its own.
    ``app`` is the web app the caller serves it with, if any; ``close()``
    closes the app, then the box before its factory resets, then the store."""

    def __init__(self, folder, clock=time.time):
        from gpiozero.pins.mock import MockFactory

        from companion.session import TableSession
        from companion.store import Store

        self.store = Store(folder, clock=clock)
        self.session = TableSession(self.store)
        self.factory = MockFactory()
        self.box = Box(self.session, box_config(), mock=True, pin_factory=self.factory)
        self.box.start()
        self.app = None

    def close(self) -> None:
        if self.app is not None:
            self.app.extensions["companion"].close()
        self.box.close()
        self.factory.reset()
        self.store.close()


@pytest.fixture
def world(tmp_path):
    """``world(name="table")`` -> (session, box, client): a :class:`MockTable`
    of its own under the test's folder, served by the web app (mock mode)."""
    from web_support import make_app

    made = []

    def make(name="table"):
        table = MockTable(tmp_path / name)
        made.append(table)
        table.app = make_app(table.session, box=table.box, mock=True)
        return table.session, table.box, table.app.test_client()

    yield make
    for table in made:
        table.close()


def counting_box(session, mock_factory, **config) -> Box:
    """A started mock box whose ``press`` counts the presses in ``box.presses``."""
    b = Box(session, box_config(**config), mock=True, pin_factory=mock_factory)
    b.start()
    b.presses = 0
    press = b.press

    def counted(name):
        b.presses += 1
        press(name)
    b.press = counted
    return b


@pytest.fixture
def box(session, mock_factory):
    b = counting_box(session, mock_factory, bounce_ms=1)
    yield b
    b.close()


def record_cut_texts(monkeypatch) -> set:
    """Patch ``hardware.draw.fit`` for the test: every text it cuts short
    (with an ellipsis) is added to the set returned."""
    from hardware import draw

    cut: set = set()
    fit = draw.fit

    def recording_fit(text, font, width):
        out = fit(text, font, width)
        if out != text:
            cut.add(text)
        return out
    monkeypatch.setattr(draw, "fit", recording_fit)
    return cut


def shows(box, *words) -> None:
    """The current frame draws every one of ``words``."""
    drawn = " | ".join(box.frame.texts)
    missing = [w for w in words if w not in drawn]
    assert not missing, f"frame {box.frame_version} lacks {missing}; it shows: {drawn}"


def press_all(box, keys) -> None:
    for key in keys:
        box.press(key)
