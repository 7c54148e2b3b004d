"""The turn clock: a time bank per seat, handed on turn by turn.

Two halves, both free of any adapter:

* the **record** the game's log keeps (``docs/replay.md``, "The turn
  clock"): ``{"mode", "extra", "banks", "turn"}`` — the clock's mode, its
  increment or delay in milliseconds, every seat's bank in milliseconds as
  it stood at the last handover, and the seat running since then (``null``:
  nobody runs, e.g. a bank ran out or the game ended).  A record is a fact
  of the past: it holds no wall-clock time, so a log still replays the same
  way anywhere;
* the **live clock** (:class:`TurnClock`): the latest record plus when the
  running seat's turn began (from an injected monotonic clock), whether it
  is paused, and what it has used so far.  Only handovers reach the log, so
  losing power leaves the clocks as they were at the last handover, paused.

Modes: ``sudden`` (the bank only runs down), ``fischer`` (``extra`` is added
to a bank whose seat ends its turn in time), ``delay`` (simple delay: the
first ``extra`` of every turn is free).

Games with a turn order of their own (``FOLLOWED``) hand the clock on with
their own moves; the others hand it on with an explicit handover to the next
seat in play.
"""

from __future__ import annotations

import math
import time
from typing import Callable

from .errors import IllegalActionError, InvalidActionError
from .fields import Context, Int, List, Str, check_record, is_int
from .i18n import N_

MODES = ("sudden", "fischer", "delay")
MAX_BANK_MS = 24 * 3600 * 1000          # a day: more than any table sits
MAX_EXTRA_MS = 3600 * 1000

# The key of a game's public state naming the seat whose turn it is, for
# the games that have a turn order of their own: the clock follows it.
FOLLOWED = {"fight": "turn", "yenta": "turn", "sloppy-seconds": "lead"}

_FIELDS = {
    "mode": Str(choices=MODES),
    "extra": Int(0, MAX_EXTRA_MS),
    "banks": List(Int(0, MAX_BANK_MS), min_len=1),
}


def check_record_of(obj, seats: int, where: str = "") -> dict:
    """A clock record checked strictly like any action's fields (``obj``
    without its ``type``); returns it with ``banks`` as a list."""
    if not isinstance(obj, dict):
        raise InvalidActionError(N_("'clock' must be an object"))
    fields = dict(_FIELDS)
    fields["banks"] = List(Int(0, MAX_BANK_MS), min_len=seats, max_len=seats)
    fields["turn"] = _MaybeSeat()
    checked = check_record(obj, fields, Context(seats), where=where, skip=("type",))
    if checked["mode"] == "sudden" and checked["extra"]:
        raise InvalidActionError(N_("'extra' must be 0 in sudden death, got {value}"), value=checked["extra"])
    return {"mode": checked["mode"], "extra": checked["extra"], "banks": list(checked["banks"]),
            "turn": checked["turn"]}


class _MaybeSeat(Int):
    """A seat, or null."""

    def check(self, value, name, ctx):
        if value is None:
            return None
        if not is_int(value) or not 0 <= value < ctx.seats:
            raise InvalidActionError(N_("'{name}' must be a seat or null, got {value}"), name=name, value=value)
        return value


def followed_turn(public: dict):
    """The seat whose turn the game itself names (None: the game has no
    turn order of its own, or nobody's turn, e.g. once it is finished)."""
    key = FOLLOWED.get(public.get("game"))
    return public.get(key) if key else None


def seats_in_play(public: dict) -> list[int]:
    """Seats still playing: every seat but those the game lists as out."""
    out = set(public.get("out") or ())
    return [s for s in range(len(public.get("players") or ())) if s not in out]


def next_seat(public: dict, record: dict, after) -> int | None:
    """The seat after ``after`` in turn order that is in play and has time
    left (None: none has)."""
    seats = [s for s in seats_in_play(public) if record["banks"][s] > 0]
    if not seats:
        return None
    start = -1 if after is None else after
    later = [s for s in seats if s > start]
    return later[0] if later else seats[0]


def new_record(mode: str, bank_ms: int, extra_ms: int, seats: int, turn) -> dict:
    return {"mode": mode, "extra": 0 if mode == "sudden" else extra_ms, "banks": [bank_ms] * seats, "turn": turn}


class TurnClock:
    """The live clock of the table (see the module's docstring).  ``now`` is a
    monotonic clock in seconds, injected so that tests drive time."""

    def __init__(self, now: Callable[[], float] = time.monotonic):
        self.now = now
        self.record: dict | None = None
        self.running = False
        self.since = 0.0        # when the running seat's time began to count (while running)
        self.spent = 0.0        # seconds the running seat used before the last pause
        self.last_ran: int | None = None   # the seat that ran before a stop (the turn order goes on after it)

    # -- following the log ----------------------------------------------------
    def follow(self, record: dict | None, running: bool, charged_ms: int = 0) -> None:
        """A new record from the log (a handover, an undo, a resumed game):
        its turn starts now, with ``charged_ms`` already lost from the
        running seat's bank (an undo gives a turn back as it was left)."""
        if self.record is not None and self.record["turn"] is not None:
            self.last_ran = self.record["turn"]
        self.record = record
        self.spent = 0.0
        if charged_ms > 0 and record is not None:
            # In simple delay the free part was used up before the time
            # given back was lost.
            self.spent = (charged_ms + (record["extra"] if record["mode"] == "delay" else 0)) / 1000
        self.since = self.now()
        self.running = bool(running and record is not None and record["turn"] is not None)

    # -- reading --------------------------------------------------------------
    def used_s(self, at: float | None = None) -> float:
        """Seconds the running seat has used this turn (pauses excluded)."""
        if self.record is None:
            return 0.0
        at = self.now() if at is None else at
        return self.spent + (max(0.0, at - self.since) if self.running else 0.0)

    def charged_ms(self, at: float | None = None) -> int:
        """What the running seat's bank has lost so far this turn (simple
        delay: the first ``extra`` is free)."""
        used = int(self.used_s(at) * 1000)
        if self.record and self.record["mode"] == "delay":
            used = max(0, used - self.record["extra"])
        return used

    def remaining_ms(self, seat: int, at: float | None = None) -> int:
        if self.record is None:
            return 0
        bank = self.record["banks"][seat]
        if seat != self.record["turn"]:
            return bank
        return max(0, bank - self.charged_ms(at))

    def flagged(self, at: float | None = None) -> int | None:
        """The running seat, if its bank has run out."""
        if self.record is None or self.record["turn"] is None:
            return None
        seat = self.record["turn"]
        return seat if self.remaining_ms(seat, at) <= 0 else None

    def until_next_second(self, at: float | None = None) -> float | None:
        """Seconds until the running seat's shown time (whole seconds, rounded
        up) changes: when the panel must redraw it.  None while paused."""
        if not self.running or self.record is None or self.record["turn"] is None:
            return None
        at = self.now() if at is None else at
        seat = self.record["turn"]
        left = self.record["banks"][seat] - self.charged_ms(at)
        if left <= 0:
            return 0.0
        if self.record["mode"] == "delay" and self.used_s(at) * 1000 < self.record["extra"]:
            return (self.record["extra"] - self.used_s(at) * 1000) / 1000 + 0.001
        step = left - (math.ceil(left / 1000) - 1) * 1000      # ms until the shown second drops
        return step / 1000 + 0.001

    def live(self, at: float | None = None) -> dict | None:
        """What the phones are told: the record, whether it runs, how much
        the running seat's bank had lost when this was said (``used_ms``),
        and how much of its simple delay was still free (``free_ms``): a
        phone counts down from there by itself."""
        if self.record is None:
            return None
        free = 0
        if self.record["mode"] == "delay":
            free = max(0, self.record["extra"] - int(self.used_s(at) * 1000))
        return dict(self.record, running=self.running, used_ms=self.charged_ms(at), free_ms=free)

    # -- changing -------------------------------------------------------------
    def handover(self, to, at: float | None = None) -> dict:
        """The record after the running seat's turn ends now and ``to`` (a
        seat or None) starts: its bank keeps what is left, plus the Fischer
        increment if it ended in time."""
        record = self.record
        if record is None:
            raise IllegalActionError(N_("no turn clock is set"))
        banks = list(record["banks"])
        seat = record["turn"]
        if seat is not None:
            left = max(0, banks[seat] - self.charged_ms(at))
            if left > 0 and record["mode"] == "fischer" and to != seat:
                left = min(MAX_BANK_MS, left + record["extra"])
            banks[seat] = left
        return {"mode": record["mode"], "extra": record["extra"], "banks": banks, "turn": to}

    def given_back(self, undone: dict, before: dict) -> int:
        """What the seat running in ``before`` had lost when it handed over to
        ``undone`` (the record an undo takes back): its turn comes back with
        that time, the increment it earned taken away again."""
        seat = before["turn"]
        if seat is None or undone is None or undone["turn"] == seat:
            return 0
        left = undone["banks"][seat]
        if left > 0 and undone["mode"] == "fischer":
            left -= undone["extra"]
        return max(0, before["banks"][seat] - left)

    def after(self) -> int | None:
        """The seat the turn order goes on after: the running one, else the
        last one that ran (after a bank ran out), else the last seat whose
        bank is empty (a stop read back from the log)."""
        if self.record is None:
            return None
        if self.record["turn"] is not None:
            return self.record["turn"]
        if self.last_ran is not None:
            return self.last_ran
        empty = [s for s, ms in enumerate(self.record["banks"]) if ms <= 0]
        return empty[-1] if empty else None

    def pause(self) -> bool:
        if not self.running:
            return False
        self.spent = self.used_s()
        self.running = False
        return True

    def resume(self) -> bool:
        if self.running or self.record is None or self.record["turn"] is None:
            return False
        self.since = self.now()
        self.running = True
        return True


def format_ms(ms: int) -> str:
    """A bank as the panel and phones show it: h:mm:ss or m:ss, whole
    seconds rounded up (0:00 only once it ran out)."""
    s = max(0, math.ceil(ms / 1000))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
