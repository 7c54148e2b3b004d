"""The turn clock on the mock box, on a fake clock: a whole clocked game of
the free scoreboard and of FIGHT? in every clock mode, with pause, undo, a
bank running out (message, buzzer, the seat's LED) and a restart after a
kill; every frame the clock's screens draw passes the layout check, in
English and French, with long accented names."""

from __future__ import annotations

import time

import pytest

from companion.session import TableSession
from companion.store import Store
from hardware import Box
from hardware import box as box_module
from hardware import draw as d
from hardware.layout import problems
from hardware.testing import box_config
from hardware.ui import clock as clock_ui
from hardware.ui.app import App

from box_support import record_cut_texts

LEDS = [5, 6, 12, 13]
BUZZER = 16
LONG = ["Marc-Antoine", "Éloïse", "Zoé"]
# What a seat's bank is after 30 s and a handover, per mode (10 min, 5 s extra).
AFTER_30S = {"sudden": 570_000, "fischer": 575_000, "delay": 575_000}


class FakeTime:
    def __init__(self):
        self.t = 10_000.0

    def __call__(self):
        return self.t


class Table:
    """A store, a session on a fake clock and a mock box with LEDs and a buzzer."""

    def __init__(self, folder, language, fake):
        from gpiozero.pins.mock import MockFactory

        self.folder, self.language, self.fake = folder, language, fake
        self.factory = MockFactory()
        self.open()

    def open(self):
        self.store = Store(self.folder)
        self.session = TableSession(self.store)
        self.session.clock.now = self.fake
        self.box = Box(self.session, box_config(bounce_ms=1, language=self.language, leds=LEDS, buzzer=BUZZER),
                       mock=True, pin_factory=self.factory)
        self.box.start()

    def kill(self):
        """As after a power cut: the box and the store go, nothing is closed
        in order; a new session picks the game up from the store."""
        self.box.close()
        self.factory.reset()
        self.open()

    def close(self):
        self.box.close()
        self.factory.reset()
        self.store.close()

    # -- driving ------------------------------------------------------------
    def press(self, *keys):
        for key in keys:
            self.box.press(key)

    def menu(self, label):
        """Open the menu and pick ``label`` (its English text: the rows are
        in the same order in every language)."""
        self.box.press("back")
        rows = [r[0] for r in self.box.app.layers[-1].rows()]
        for _ in range(rows.index(label)):
            self.box.press("down")
        self.box.press("ok")

    def setup(self, mode):
        """Menu → Turn clock → the set-up: ``mode``, 10 min, 5 s; Start."""
        self.menu("Turn clock")
        assert isinstance(self.box.app.layers[-1], clock_ui.ClockSetup)
        while self.box.app.clock_choice["mode"] != mode:
            self.press("ok")                         # the Mode row: its next value
        rows = self.box.app.layers[-1].rows()
        self.press(*["down"] * (len(rows) - 1), "ok")   # Start

    def advance(self, seconds):
        self.fake.t += seconds
        self.box.flush()

    def wait_for(self, what, ceiling=120.0):
        # A ceiling, not a budget: it fails a box that never gets there.  Under
        # arm64 emulation at the lowest CPU priority beside another suite, a
        # clocked FIGHT? game failed with 30 s (its output was lost).
        deadline = time.monotonic() + ceiling
        while not what():
            assert time.monotonic() < deadline, "the box never got there"
            self.box.flush()
            time.sleep(0.01)

    def clock(self):
        return self.session.public()["clock"]

    def banks(self):
        return [self.session.clock.remaining_ms(s) for s in range(len(self.session.players))]

    def texts(self):
        self.box.flush()
        return " | ".join(self.box.frame.texts)

    def on_clock(self):
        return bool(self.box.app.layers) and isinstance(self.box.app.layers[-1], clock_ui.ClockScreen)


@pytest.fixture(params=["en", "fr"])
def table(request, tmp_path, monkeypatch):
    cut = record_cut_texts(monkeypatch)
    canvases = []

    class RecordingCanvas(d.Canvas):
        def __init__(self):
            super().__init__()
            canvases.append(self)
    monkeypatch.setattr(box_module, "Canvas", RecordingCanvas)
    draw = App.draw

    def draw_and_tag(app, c):
        c.clock = bool(app.layers) and isinstance(app.layers[-1], (clock_ui.ClockScreen, clock_ui.ClockSetup))
        draw(app, c)
    monkeypatch.setattr(App, "draw", draw_and_tag)
    t = Table(tmp_path / "data", request.param, FakeTime())
    yield t
    t.close()
    clock_frames = [c for c in canvases if getattr(c, "clock", False)]
    assert clock_frames, "no clock screen was drawn"
    failures = {" | ".join(c.texts): problems(c) for c in clock_frames if problems(c)}
    assert not failures, failures
    assert not cut, f"texts cut short: {sorted(cut)}"


def led(table, seat) -> bool:
    return bool(table.factory.pin(LEDS[seat]).state)


def buzzed(table) -> bool:
    return any(s.state for s in table.factory.pin(BUZZER).states)


@pytest.mark.parametrize("mode", ["sudden", "fischer", "delay"])
def test_a_whole_clocked_scoreboard_game(table, mode):
    s = table.session
    s.submit({"type": "new_game", "game": "scoreboard", "players": LONG, "options": {"target": 10}})
    table.setup(mode)
    assert table.on_clock() and table.clock()["turn"] == 0 and s.clock.running
    assert "10:00" in table.texts() and "Marc-Antoine" in table.texts()

    table.advance(30)
    assert ("9:35" if mode == "delay" else "9:30") in table.texts()   # simple delay: 5 s free
    table.press("ok")                                     # Marc-Antoine's turn ends
    assert table.clock()["turn"] == 1 and table.clock()["banks"][0] == AFTER_30S[mode]

    table.advance(12)
    table.press("back")                                   # pause
    assert not s.clock.running
    table.advance(300)                                    # nothing runs while paused
    assert table.banks()[1] == (588_000 if mode == "sudden" else 588_000 if mode == "fischer" else 593_000)
    table.press("ok")                                     # go on
    assert s.clock.running

    s.submit({"type": "add", "seat": 1, "points": 4}, source="web")   # scores from a phone meanwhile
    table.advance(8)
    table.press("ok")                                     # Éloïse's turn ends
    assert table.clock()["turn"] == 2
    table.advance(40)

    assert table.box.hold("back")                         # undo: Éloïse's handover comes back
    assert "handover" in table.texts() or "passage" in table.texts()
    table.press("ok")
    table.wait_for(lambda: table.clock()["turn"] == 1)
    used = 20_000 - (5000 if mode == "delay" else 0)
    assert table.banks() == [AFTER_30S[mode], 600_000 - used, 600_000]
    assert not table.on_clock()                           # the undo closed the layers
    table.menu("Turn clock")
    assert table.on_clock()

    table.advance(700)                                    # Éloïse's bank runs out
    table.wait_for(lambda: table.clock()["turn"] is None)
    assert table.clock()["banks"][1] == 0
    shown = table.texts()
    assert "Éloïse" in shown and ("time is up" in shown or "temps écoulé" in shown)
    table.wait_for(lambda: led(table, 1))
    assert buzzed(table)
    table.press("ok")                                     # the message goes
    table.press("ok")                                     # the next seat with time starts
    assert table.clock()["turn"] == 2

    table.advance(10)
    table.press("ok")                                     # Zoé → Marc-Antoine (Éloïse is skipped)
    assert table.clock()["turn"] == 0
    table.advance(5)
    lines = s.export_lines()

    table.kill()                                          # power lost: back to the last handover, paused
    s = table.session
    assert s.export_lines() == lines
    assert table.clock()["turn"] == 0 and not s.clock.running
    table.advance(100)
    assert table.banks()[0] == table.clock()["banks"][0]
    table.menu("Turn clock")
    assert table.on_clock()
    assert "pause" in table.texts().lower()
    table.press("ok")                                     # go on
    assert s.clock.running
    s.submit({"type": "add", "seat": 0, "points": 10}, source="web")
    assert s.public()["finished"] and not s.clock.running          # the game over stops the clock
    table.advance(600)
    table.box.flush()
    assert table.clock()["turn"] == 0                     # a finished game logs no more handovers
    assert led(table, 1)


def fight_move(table):
    """The seat to play plays its largest coin and takes the largest change
    (OK, OK on the FIGHT? screen)."""
    before = len(table.session.export_lines())
    table.press("ok", "ok")
    table.wait_for(lambda: len(table.session.export_lines()) > before)


@pytest.mark.parametrize("mode", ["sudden", "fischer", "delay"])
def test_a_whole_clocked_fight_game(table, mode):
    s = table.session
    s.submit({"type": "new_game", "game": "fight", "players": LONG[:2]})
    table.setup(mode)
    assert table.clock()["turn"] == 0 and s.clock.running
    assert "OK" in table.texts()
    table.press("ok")                                     # to the game, to enter the move
    assert not table.on_clock()
    table.advance(30)
    fight_move(table)
    assert s.public()["turn"] == 1 and table.clock()["turn"] == 1
    assert table.clock()["banks"] == [AFTER_30S[mode], 600_000]
    assert table.on_clock()                               # the clock is back after the move

    table.press("back")                                   # pause, then leave it paused
    table.press("back")
    table.advance(50)
    assert table.banks() == [AFTER_30S[mode], 600_000]
    table.menu("Turn clock")
    table.press("ok")                                     # go on, to the game
    table.advance(10)
    fight_move(table)
    assert s.public()["turn"] == 0 and table.clock()["turn"] == 0

    assert table.box.hold("back")                         # undo: the move and its handover
    table.press("ok")
    table.wait_for(lambda: s.public()["turn"] == 1)
    assert table.clock()["turn"] == 1
    assert table.banks()[1] == 600_000 - (10_000 if mode != "delay" else 5000)

    table.menu("Turn clock")
    table.advance(900)                                    # seat 1's bank runs out
    table.wait_for(lambda: table.clock()["turn"] is None)
    table.wait_for(lambda: led(table, 1))
    assert buzzed(table)
    table.press("ok")                                     # the message goes
    table.press("back")                                   # leave the clock
    while table.box.app.layers:
        table.press("back")

    table.kill()
    s = table.session
    assert table.clock()["turn"] is None and not s.clock.running
    moves = 0
    while not s.public()["finished"]:
        table.advance(3)
        fight_move(table)
        moves += 1
        while table.box.app.layers:                       # the clock came back: to the game
            table.press("ok") if table.on_clock() else table.press("back")
        assert table.clock()["turn"] == s.public()["turn"]
        assert moves < 200
    assert table.clock()["turn"] is None
