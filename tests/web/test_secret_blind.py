"""Secret-blind refusals (issue 13, finding 2).

Whether an action is accepted, and the exact words of its refusal, never
depend on a value not yet revealed.  For random tables of every game with
secret entries we build a second world that differs only in the values of
the entries still unrevealed (same seats entered, same keys), then try many
next actions, legal and illegal, in both: the answers must be identical.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion.errors import ActionError
from companion.timeline import Timeline, replay
from secret_games import COLOURS, play
from web_support import make_app, make_session, pin_headers


def other_world(data, t: Timeline) -> Timeline:
    """``t``'s game with every unrevealed secret value drawn afresh (legal, same keys)."""
    log = [dict(action) for action in t.log]
    public = t.public()
    for index in t.unrevealed():
        action = log[index]
        if action["type"] == "bid":
            action["card"] = data.draw(st.sampled_from(public["hands"][action["seat"]]), label="other card")
        elif action["type"] == "double":
            action["play"] = data.draw(st.booleans(), label="other play")
        else:
            action["value"] = data.draw(st.integers(-10**9, 10**9), label="other value")
    other = replay([json.dumps(a) for a in log])       # every line accepted: itself secret-blindness
    assert other.log == log
    assert set(other.state.hidden) == set(t.state.hidden)
    assert other.public() == public
    return other


def candidates(t: Timeline) -> list:
    """Next actions to try, legal and illegal."""
    n = len(t.players)
    seats = range(-1, n + 1)
    out = [{"type": "undo"}, {"type": "nope"}, {"type": "undo", "seat": 0}, [], "bid",
           {"type": "new_game", "game": t.game.id, "players": list(t.players)}]
    if t.game.id == "third-man":
        out += [{"type": "bid", "seat": s, "card": c} for s in seats for c in range(-1, 11)]
        out += [{"type": "bid", "seat": 1}, {"type": "bid", "seat": 1, "card": "3"},
                {"type": "bid", "seat": 2, "card": 3, "extra": 1}, {"type": "bid", "seat": True, "card": 3}]
    elif t.game.id == "scoreboard":
        out += [{"type": "secret", "seat": s, "value": v} for s in seats for v in (0, -3, 10**9, 10**9 + 1)]
        out += [{"type": "add", "seat": s, "points": p} for s in seats for p in (1, 40)]
        out += [{"type": "token", "seat": s, "delta": d} for s in seats for d in (-1, 1)]
        out += [{"type": "secret", "seat": 0}, {"type": "secret", "seat": 0, "value": 1.5}]
    else:
        colours = list(dict.fromkeys([*t.state.colors, *COLOURS, "pink", "Red"]))
        subsets = [list(c) for k in range(n + 1) for c in itertools.combinations(range(n), k)]
        for color in colours:
            for sides in (None, (5, 1), (1, 5), (3, 3), (0, 0)):
                for doubles in [None, *subsets, [0, 0], [n]]:
                    action = {"type": "score", "color": color, "hands": [1] * n}
                    if doubles is not None:
                        action["doubles"] = doubles
                    if sides is not None:
                        action["heaven"], action["hell"] = sides
                    out.append(action)
            out += [{"type": "double", "seat": s, "color": color, "play": p} for s in seats for p in (True, False)]
            out += [{"type": "place", "seat": s, "color": color, "side": side, "value": v}
                    for s in range(n) for side in ("heaven", "hell") for v in (1, 5)]
        out += [{"type": "score", "color": "red", "hands": [0] * (n - 1)}, {"type": "double", "seat": 0, "color": ""}]
    return out


def answer(t: Timeline, action) -> tuple:
    """What the table says to ``action``, and the public state it would lead to
    when that state reveals nothing (the reveal itself may differ)."""
    try:
        pending = t.check(action)
    except ActionError as exc:
        return ("refused", type(exc).__name__, exc.template, str(exc))
    if pending.step is None:
        after = t.steps[-2].state if len(t.steps) > 1 else None
    else:
        after = pending.step.state
    shown = None
    if after is not None and set(t.state.hidden) <= set(after.hidden):
        shown = t.game.public(after)
    return ("accepted", pending.step is not None and pending.step.secret, pending.drops is not None, shown)


@pytest.mark.parametrize("game", ["third-man", "diabolo", "scoreboard"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_no_answer_depends_on_an_unrevealed_value(game, data):
    a, _raw = play(data, game, data.draw(st.integers(0, 40), label="length"),
                   data.draw(st.integers(0, 4), label="secrets at the end"))
    b = other_world(data, a)
    for action in candidates(a):
        assert answer(a, action) == answer(b, action), action


# -- finding 2, as it was found --------------------------------------------------------------

def test_finding_2_an_outsider_cannot_recover_the_double_decisions(tmp_path):
    """Decisions for red entered; an outsider with the PIN posts a score with
    each subset as ``doubles``: every answer is the same refusal, whatever
    the decisions, and the game is unchanged."""
    answers = {}
    for decisions in itertools.product((True, False), repeat=3):
        folder = tmp_path / "".join("P" if d else "K" for d in decisions)
        session = make_session(folder)
        client = make_app(session).test_client()
        session.submit({"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]})
        for seat, play_it in enumerate(decisions):
            session.submit({"type": "double", "seat": seat, "color": "red", "play": play_it})
        before = session.public()
        replies = []
        for k in range(4):
            for subset in itertools.combinations(range(3), k):
                r = client.post("/api/actions", headers=pin_headers(), json={
                    "type": "score", "color": "red", "hands": [0, 0, 0], "doubles": list(subset),
                    "heaven": 0, "hell": 0})
                replies.append((r.status_code, r.json))
        assert session.public() == before
        answers[decisions] = replies
        session.store.close()
    every = {json.dumps(reply) for replies in answers.values() for reply in replies}
    assert len(every) == 1, every
    status, body = json.loads(every.pop())
    assert status == 409 or 400 <= status < 500
    assert "'doubles' cannot be given for red" in body["error"]
