"""A stored game as the public may see it: for step-through, charts and exports.

A secret entry (a Third Man card, a scoreboard number, a Diabolo double) is
part of the log, but until the table has seen it revealed, every public
rendering of the log must hide its value.  :func:`public_steps` folds the
*public log* (:func:`companion.exports.public_log`: an entry taken back with
``undo`` before its reveal is gone, with that ``undo``) and redacts each
secret entry that the table has not seen revealed by the end of the log.
"""

from __future__ import annotations

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
