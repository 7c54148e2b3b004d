"""FIGHT? hints off the box's thread (companion.hints.HintWorker).

The box asks, draws "thinking…" and goes on handling presses; the answer
comes from the worker (a process by default, a thread on request) and is
drawn when it arrives.  A gated solver (tests/hint_gate.py: the real solver,
held until the test opens a gate) makes "while the search is still
running" certain instead of a race.
"""

from __future__ import annotations

import time

import pytest

from companion import fight_solver
from companion.hints import HintWorker
from hardware.ui.fight import POLL_S

from box_support import box, mock_factory, shows  # noqa: F401 (fixtures)
from test_box_fight import hint_shown, move_text, start

THINKING = "thinking\u2026"
# A search's budget where the test is not about the budget: a ceiling for a
# hung worker.  The box's own 20 s (companion.hints.BUDGET_S) includes the
# worker's start and the time the gate is held, which a loaded machine or
# a second test worker can stretch past it with nothing wrong.
CEILING_S = 120.0


@pytest.fixture
def gate(tmp_path, monkeypatch):
    path = tmp_path / "open"
    monkeypatch.setenv("COMPANION_TEST_HINT_GATE", str(path))
    return path


@pytest.mark.parametrize("process", [True, False], ids=["process", "thread"])
def test_presses_are_handled_while_the_hint_is_searched(box, session, gate, process):
    worker = box.app.hints = HintWorker(process=process, budget_s=CEILING_S, solver="hint_gate:gated_hint")
    try:
        start(box, session, ["Ann", "Ben"])
        box.press("up")
        box.press("ok")
        shows(box, "Hint for Ann", THINKING, "BACK: cancel")
        thinking = box.frame_version
        box.press("back")                                   # handled and drawn at once...
        shows(box, "Ann: hint?")
        assert box.frame_version > thinking
        assert worker.busy, "...while the search still runs: the box did not wait for it"
        box.press("down")                                   # the cursor moves on the grid
        box.press("up")
        shows(box, "Ann: hint?")
        assert worker.busy
        box.press("ok")                                     # asked again: waits for the same search
        shows(box, THINKING)
        gate.touch()
        hint_shown(box)
        expected = fight_solver.hint(session.public())
        shows(box, "Hint for Ann", move_text(expected.play, expected.take), "perfect play")
        box.press("ok")                                     # and it can be played
        assert session.timeline.log[-1] == expected.action()
        assert worker.searches == 1, "the same position is searched once"
    finally:
        gate.touch()
        worker.close()


def test_the_thinking_screen_moves_while_it_waits(box, session, gate):
    worker = box.app.hints = HintWorker(budget_s=CEILING_S, solver="hint_gate:gated_hint")
    try:
        start(box, session, ["Ann", "Ben"])
        box.press("up")
        box.press("ok")
        first = box.frame.image.tobytes()
        seen = {first}
        deadline = time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(POLL_S / 2)
            seen.add(box.frame.image.tobytes())
        assert len(seen) >= 2, "the thinking screen never changed: is the box alive?"
        shows(box, THINKING)
    finally:
        gate.touch()
        worker.close()


def test_a_search_over_budget_is_abandoned_and_says_so(box, session, gate):
    worker = box.app.hints = HintWorker(budget_s=0.3, solver="hint_gate:gated_hint")
    try:
        start(box, session, ["Ann", "Ben"])
        box.press("up")
        box.press("ok")
        hint_shown(box)
        shows(box, "Hint for Ann", "no hint: the search", "took too long")
        assert "OK: play it" not in box.frame.texts
        box.press("ok")
        shows(box, "Ann: hint?")
        gate.touch()                                        # a new process answers the next ask
        worker.budget_s = CEILING_S                         # (its start and a cold search included)
        box.press("ok")
        hint_shown(box)
        shows(box, "Hint for Ann", "perfect play")
        assert len(session.timeline.log) == 1
    finally:
        gate.touch()
        worker.close()


def test_a_change_from_a_phone_drops_the_awaited_hint(box, session, gate):
    worker = box.app.hints = HintWorker(process=False, budget_s=CEILING_S, solver="hint_gate:gated_hint")
    try:
        start(box, session, ["Ann", "Ben"])
        box.press("up")
        box.press("ok")
        shows(box, THINKING)
        session.submit({"type": "turn", "seat": 0, "play": 5, "take": []}, source="web")
        box.flush()
        shows(box, "Ben plays")
        gate.touch()
        assert worker.wait_idle(30)
        box.flush()
        shows(box, "Ben plays")                             # the late answer is not shown
    finally:
        gate.touch()
        worker.close()


def test_a_phone_waiting_for_a_hint_does_not_hold_up_the_box(box, session, gate):
    """/api/fight/hint waits on the hint worker on its own thread: the box
    answers presses meanwhile, and the phone gets the solver's move."""
    import threading

    from web_support import make_app

    worker = HintWorker(budget_s=CEILING_S, solver="hint_gate:gated_hint")
    app = make_app(session, box=box)
    app.extensions["companion.hints"] = worker
    try:
        start(box, session, ["Ann", "Ben"])
        answer = []
        phone = threading.Thread(target=lambda: answer.append(app.test_client().get("/api/fight/hint").json))
        phone.start()
        assert wait_for(lambda: worker.busy)
        box.press("down")                                   # the box moves on while the phone waits
        shows(box, "Ann plays")
        box.press("ok")
        shows(box, "\u2192")                                 # choosing the change
        assert phone.is_alive() and not answer
        gate.touch()
        phone.join(30)
        expected = fight_solver.hint(session.public())
        assert answer[0]["play"] == expected.play and answer[0]["take"] == list(expected.take)
    finally:
        gate.touch()
        worker.close()
        app.extensions["companion"].close()


def wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True
