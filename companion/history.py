"""A stored game as the public may see it: for step-through, charts and exports.

A secret entry (a Third Man card, a scoreboard number, a Diabolo double) is
part of the log, but until the table has seen it revealed, every public
rendering of the log must hide its value.  :func:`public_steps` folds the
*public log* (:func:`companion.exports.public_log`: an entry taken back with
``undo`` before its reveal is gone, with that ``undo``) and redacts each
secret entry that the table has not seen revealed by the end of the log.
"""

from __future__ import annotations

import json

from .timeline import Timeline, parse_line

PUBLIC_KEYS = ("type", "seat", "color")   # the parts of a secret entry anybody may see


def redact(action: dict) -> dict:
    return {k: (v if k in PUBLIC_KEYS else None) for k, v in action.items()}


def public_steps(lines) -> list[dict]:
    """``[{"n": line number, "action": ..., "state": public state after it}]``
    for every line of the public log of a valid stored log, secrets redacted
    (``n`` counts the lines of the public log)."""
    lines = list(lines)
    timeline = Timeline()
    steps: list[dict] = []
    for text in lines:
        if not text.strip():
            continue
        pending = timeline.check(parse_line(text))
        if pending.drops is not None:
            # A secret taken back unrevealed: the states gathered so far were
            # folded with it in effect.  Start again from the public log.
            from .exports import public_log
            return public_steps(public_log(lines))
        timeline.push(pending)
        steps.append({"n": len(timeline.log), "action": pending.action, "state": timeline.public()})
    # Without pairs to drop, steps[i] is line i of the public log; what is
    # still unrevealed at the end is in effect (anything popped was revealed).
    for index in timeline.unrevealed():
        steps[index]["action"] = redact(steps[index]["action"])
    return steps


def public_lines(lines) -> list[dict]:
    """The log's actions, secrets redacted (for an export without the PIN)."""
    return [s["action"] for s in public_steps(lines)]


# The games a table may name at their start (``options.name``): the free
# scoreboard keeps any game on the shelf, "Carcassonne" rather than "Scoreboard".
NAMED_GAMES = ("scoreboard",)


def game_name(first) -> str | None:
    """The name a table gave its game at its start, from the log's first
    line (``new_game``, as text or as an action), or None: only a free
    scoreboard game has one, and a line that does not read has none."""
    if isinstance(first, (str, bytes)):
        try:
            first = json.loads(first)
        except ValueError:
            return None
    if not isinstance(first, dict) or first.get("game") not in NAMED_GAMES:
        return None
    options = first.get("options")
    name = options.get("name") if isinstance(options, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def first_names(store, records) -> dict[int, str]:
    """{game id: name} of the named games among ``records`` (one read of
    their first lines; the caller holds the store)."""
    ids = [r.id for r in records if getattr(r, "game", None) in NAMED_GAMES]
    out = {}
    for start in range(0, len(ids), 500):            # SQLite's bound on one query's parameters
        for gid, line in store.first_lines(ids[start:start + 500]).items():
            name = game_name(line)
            if name:
                out[gid] = name
    return out
