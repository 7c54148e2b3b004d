"""Random tables of the games with secret entries, for property tests.

:func:`play` draws actions one at a time with hypothesis (mostly legal ones,
some illegal, undo now and then), keeps those the rules accept and returns
the *raw* log as the table typed it (every accepted action, undo included:
what a store written before "taken back means gone" would hold).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from companion.errors import ActionError
from companion.timeline import Timeline

SECRET_GAMES = ("third-man", "diabolo", "scoreboard")
COLOURS = ("red", "blue", "green", "yellow", "purple")


def new_game(data, game: str) -> dict:
    if game == "third-man":
        return {"type": "new_game", "game": game, "players": ["Ann", "Ben", "Cat", "Dan"],
                "options": {"tokens_to_win": data.draw(st.integers(1, 2), label="tokens")}}
    n = data.draw(st.integers(3, 5) if game == "diabolo" else st.integers(2, 4), label="players")
    action = {"type": "new_game", "game": game, "players": [f"P{i}" for i in range(n)]}
    if game == "scoreboard" and data.draw(st.booleans(), label="target"):
        action["options"] = {"target": 30}
    return action


def candidate(data, game: str, t: Timeline) -> dict:
    """One action to try on ``t``: most are legal, some are not."""
    if data.draw(st.integers(0, 99), label="undo?") < 15:
        return {"type": "undo"}
    n = len(t.players)
    seat = data.draw(st.integers(0, n - 1), label="seat")
    if game == "third-man":
        public = t.public()
        lead, lead_card = public["lead"], public["pending"]["lead_card"]
        if lead is not None and lead_card is None and data.draw(st.integers(0, 3), label="lead?"):
            seat = lead
        hand = public["hands"][seat] or [0]
        return {"type": "bid", "seat": seat, "card": data.draw(st.sampled_from(hand), label="card")}
    if game == "scoreboard":
        kind = data.draw(st.sampled_from(["secret", "secret", "secret", "add", "token"]), label="kind")
        if kind == "secret":
            return {"type": "secret", "seat": seat, "value": data.draw(st.integers(-50, 50), label="value")}
        if kind == "add":
            return {"type": "add", "seat": seat, "points": data.draw(st.integers(-5, 10), label="points")}
        return {"type": "token", "seat": seat, "delta": data.draw(st.integers(-1, 1), label="delta")}
    public = t.public()
    pending = public["decided"]["color"] if public["decided"] else None
    open_colours = [c for c in COLOURS if c not in public["scored"]] or ["red"]
    color = pending or data.draw(st.sampled_from(open_colours), label="colour")
    kind = data.draw(st.sampled_from(["double", "double", "score", "place"]), label="kind")
    if kind == "double":
        return {"type": "double", "seat": seat, "color": color, "play": data.draw(st.booleans(), label="play")}
    if kind == "place":
        return {"type": "place", "seat": public["turn"] if public["turn"] is not None else seat, "color": color,
                "side": data.draw(st.sampled_from(["heaven", "hell"]), label="side"),
                "value": data.draw(st.integers(1, 5), label="value")}
    hands = [data.draw(st.integers(0, 12), label="hand") for _ in range(n)]
    action = {"type": "score", "color": color, "hands": hands}
    if not public["rows"]:
        heaven = data.draw(st.integers(0, 15), label="heaven")
        action.update(heaven=heaven, hell=data.draw(st.integers(0, heaven + 2), label="hell"))
    return action


def secret_entry(data, game: str, t: Timeline) -> dict:
    """A try at a secret entry (the lead's card first in The Third Man)."""
    public = t.public()
    seat = data.draw(st.integers(0, len(t.players) - 1), label="seat")
    if game == "third-man":
        if public["lead"] is not None and public["pending"]["lead_card"] is None:
            seat = public["lead"]
        hand = public["hands"][seat] or [0]
        return {"type": "bid", "seat": seat, "card": data.draw(st.sampled_from(hand), label="card")}
    if game == "scoreboard":
        return {"type": "secret", "seat": seat, "value": data.draw(st.integers(-50, 50), label="value")}
    pending = public["decided"]["color"] if public["decided"] else None
    open_colours = [c for c in COLOURS if c not in public["scored"]] or ["red"]
    return {"type": "double", "seat": seat, "color": pending or data.draw(st.sampled_from(open_colours)),
            "play": data.draw(st.booleans(), label="play")}


def play(data, game: str, steps: int, secrets: int = 0) -> tuple[Timeline, list[str]]:
    """A table of ``game`` after up to ``steps`` tries, then ``secrets`` tries
    at a secret entry: (timeline, raw log lines)."""
    t = Timeline()
    first = new_game(data, game)
    t.apply(first)
    raw = [json.dumps(first)]
    for i in range(steps + secrets):
        action = candidate(data, game, t) if i < steps else secret_entry(data, game, t)
        try:
            t.apply(action)
        except ActionError:
            continue
        raw.append(json.dumps(action))
    return t, raw
