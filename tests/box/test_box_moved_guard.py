"""No screen changes under a finger (issue 19, Deliver 5).

A result screen that moves on by itself (its time is up) must not let a
press meant for it act on the screen after it: the first press within
``MOVED_GUARD_S`` of such a move is dropped; a press at any other time acts.
The app's clock is the test's own, so nothing here depends on how loaded the
machine is."""

from __future__ import annotations

from companion.session import TableSession
from companion.store import Store
from hardware.testing import box_config
from hardware.ui import app as app_module
from hardware.ui.app import App

PLAYERS = ["Zoé", "Marc-Antoine", "Li", "Ingrid"]


def table(tmp_path):
    store = Store(tmp_path / "data")
    session = TableSession(store)
    now = [0.0]
    app = App(session, box_config(names=PLAYERS), clock=lambda: now[0])
    changes: list = []
    session.subscribe(changes.append)
    app.refresh(None)

    def follow():
        while changes:
            app.refresh(changes.pop(0))

    def later(seconds):
        now[0] += seconds
        app.due(now[0])
        follow()

    def press(key):
        app.key(key)
        follow()

    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    follow()
    return session, app, later, press


def reveal(session):
    for seat, card in [(0, 4), (1, 6), (2, 3), (3, 9)]:
        session.submit({"type": "bid", "seat": seat, "card": card}, source="web")


def test_a_press_just_after_a_result_moved_on_by_itself_is_dropped(tmp_path):
    session, app, later, press = table(tmp_path)
    reveal(session)
    later(0)
    assert app.controller.mode == "reveal"
    later(app_module.MOVED_GUARD_S + 20)            # the reveal's time is up: the track
    moved_to = app.screen_id()
    assert app.controller.mode != "reveal"
    press("ok")                                     # meant for the reveal
    assert app.screen_id() == moved_to, "the press acted on the screen after the reveal"
    press("ok")                                     # now meant for what is shown
    assert app.screen_id() != moved_to


def test_a_press_long_after_the_move_acts(tmp_path):
    session, app, later, press = table(tmp_path)
    reveal(session)
    later(0)
    later(20)
    moved_to = app.screen_id()
    later(app_module.MOVED_GUARD_S + 0.01)
    press("ok")
    assert app.screen_id() != moved_to


def test_a_press_that_dismisses_a_result_is_not_dropped(tmp_path):
    """OK on the reveal itself (no move by itself) goes on at once."""
    session, app, later, press = table(tmp_path)
    reveal(session)
    later(0)
    before = app.screen_id()
    press("ok")
    assert app.screen_id() != before


def test_a_message_that_goes_by_itself_guards_the_next_press(tmp_path):
    session, app, later, press = table(tmp_path)
    app.show_message("a refused entry")
    shown = app.screen_id()
    later(app_module.TOAST_S + 0.5)                  # the message goes
    assert app.screen_id() != shown
    under = app.screen_id()
    press("ok")                                     # meant to close the message
    assert app.screen_id() == under
