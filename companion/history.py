"""A stored game as the public may see it: for step-through, charts and exports.

A secret entry (a Third Man card, a scoreboard number, a Diabolo double) is
part of the log, but until the table has seen it revealed, every public
rendering of the log must hide its value.  :func:`public_steps` replays the
log and redacts each secret action that is still pending at the end, or that
was taken back with ``undo`` before anyone saw it.
"""

from __future__ import annotations

from .timeline import Timeline, parse_line

PUBLIC_KEYS = ("type", "seat", "color")   # the parts of a secret entry anybody may see


def redact(action: dict) -> dict:
    return {k: (v if k in PUBLIC_KEYS else None) for k, v in action.items()}


def public_steps(lines) -> list[dict]:
    """``[{"n": line number, "action": ..., "state": public state after it}]``
    for every non-blank line of a valid stored log, secrets redacted."""
    timeline = Timeline()
    steps: list[dict] = []
    secret_at: dict = {}         # hidden key -> index in ``steps`` of the entry that set it
    hide: set[int] = set()       # indexes whose action must stay redacted
    n = 0
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        action = parse_line(text)
        before = _hidden_keys(timeline)
        timeline.apply(action)
        after = _hidden_keys(timeline)
        index = len(steps)
        steps.append({"n": n, "action": action, "state": timeline.public()})
        if timeline.steps and timeline.steps[-1].secret and action.get("type") != "undo":
            for key in after - before:
                secret_at[key] = index
                hide.add(index)
        for key in before - after:
            source = secret_at.pop(key, None)
            # An entry that leaves ``hidden`` through an undo was taken back
            # before anyone saw it: it stays hidden.  Any other way out is a reveal.
            if source is not None and action.get("type") != "undo":
                hide.discard(source)
    for index in hide:
        steps[index]["action"] = redact(steps[index]["action"])
    return steps


def public_lines(lines) -> list[dict]:
    """The log's actions, secrets redacted (for an export without the PIN)."""
    return [s["action"] for s in public_steps(lines)]


def _hidden_keys(timeline: Timeline) -> set:
    return set(timeline.state.hidden) if timeline.started else set()

