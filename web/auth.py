"""Who may do what: the table PIN and the seat tokens.

* The **PIN** (4 digits, shown on the box) authorises every write: any
  action, new games, claiming and releasing seats.  It does *not* open any
  seat's private view: writing a secret for a seat is not reading one.
* A **seat token** is issued when a phone claims a free seat (with the PIN).
  It authorises that seat's own entries (see :func:`may_enter`) and reading
  that seat's private view, nothing else.

Wrong PINs and wrong tokens are counted per client address: after
``tries`` wrong ones in a row that address is refused for ``block_s``
seconds (429 with ``Retry-After``).  The block never grows, so a phone is
never locked out for longer than a few seconds.

Wrong **PINs** are also limited for the whole table, however many addresses
they come from (anyone on the Wi-Fi can take as many as they like): a
bucket of ``table_burst`` wrong PINs, refilled by one every
``table_refill_s`` seconds.  *Every* wrong PIN draws on it, whoever sends
it.  While it is empty, a PIN from an address that has not shown the right
PIN since the PIN was drawn is refused (429) *before it is compared*: the
refusal is the same whatever was typed, so a guesser learns nothing from it.
Addresses that did show the right PIN (the table's phones) are still
compared, so the table keeps working while a guesser is throttled, but a
right PIN earns no allowance for wrong ones: a wrong PIN from such an
address still costs the bucket (which may then go below zero, a debt paid
by later refills) and ends that address's trust, which only a right PIN
compared while the bucket holds one again restores.  So in any time ``T``
after a PIN is drawn at most ``table_burst + T / table_refill_s + P`` wrong
PINs are compared, ``P`` being the addresses that showed the right PIN (the
table's phones; a guesser cannot add to them without the PIN).  Seat tokens
are never throttled table-wide (192 random bits cannot be guessed).  With
the defaults (20, 60 s) finding a random 4-digit PIN takes about 83 hours
on average (see docs/security.md), and the box is told when someone
guesses (``alarm``) so the table can draw a new PIN from its menu.
"""

from __future__ import annotations

import hmac
import math
import secrets
import threading
import time

from companion.i18n import N_

from .errors import ApiError

PIN_HEADER = "X-Table-Pin"
OWNER_HEADER = "X-Owner-Password"
TOKEN_HEADER = "X-Seat-Token"
MAX_LABEL = 24

# The move types through which a seat enters its own bid or secret, per game
# (Third Man: a bid, the lead's open card included; Scoreboard: the secret
# number; Diabolo: the double decision).  A game may declare its own with a
# ``seat_entries`` attribute; any action that the game calls secret and that
# names the token's seat is accepted too.
SEAT_ENTRIES = {
    "third-man": {"bid"},
    "scoreboard": {"secret"},
    "diabolo": {"double"},
}


def new_pin() -> str:
    return f"{secrets.randbelow(10_000):04d}"


class PinGuard:
    """Checks the PIN and throttles guessing, per client address and table-wide."""

    def __init__(self, pin: str, *, tries: int = 5, block_s: float = 5.0,
                 table_burst: int = 20, table_refill_s: float = 60.0, alarm_after: int = 10,
                 alarm_every_s: float = 600.0, alarm=None,
                 clock=time.monotonic, max_clients: int = 4096):
        self.pin = str(pin)
        self.tries = tries
        self.block_s = block_s
        self.table_burst = max(1, int(table_burst))
        self.table_refill_s = max(0.001, float(table_refill_s))
        self.alarm_after = max(1, int(alarm_after))
        self.alarm_every_s = alarm_every_s
        self.alarm = alarm                          # alarm(wrong_pins): someone is guessing (see miss)
        self.clock = clock
        self.max_clients = max_clients
        self._lock = threading.Lock()
        self._misses: dict[str, int] = {}           # client -> wrong tries in a row
        self._blocked: dict[str, float] = {}        # client -> refused until (clock)
        self._bucket = float(self.table_burst)      # wrong PINs the table may still take
        self._filled_at = clock()
        self._trusted: dict[str, None] = {}         # addresses that showed this PIN (oldest first)
        self.wrong_pins = 0                         # since the start, all addresses
        self._alarmed = (0, None)                   # (wrong_pins, clock) at the last alarm

    def set_pin(self, pin: str) -> None:
        """A new PIN (drawn on the box): the old one stops working, and no
        address is trusted until it shows the new one."""
        with self._lock:
            self.pin = str(pin)
            self._trusted.clear()

    def refuse_if_blocked(self, client: str) -> None:
        with self._lock:
            until = self._blocked.get(client)
            if until is None:
                return
            wait = until - self.clock()
            if wait <= 0:
                del self._blocked[client]
                return
        seconds = max(1, math.ceil(wait))
        raise ApiError(429, N_("too many wrong PINs or tokens from this device: wait {seconds} s"),
                       headers={"Retry-After": str(seconds)}, seconds=seconds)

    def _refill(self, now: float) -> None:
        self._bucket = min(self.table_burst, self._bucket + (now - self._filled_at) / self.table_refill_s)
        self._filled_at = now

    def check(self, supplied: str, client: str) -> None:
        """Return if ``supplied`` is the PIN; else count a miss and raise 403/429."""
        self.refuse_if_blocked(client)
        alarm, right = None, False
        with self._lock:
            # Refill, decide, compare and count under one lock: concurrent
            # requests cannot all see the same last token in the bucket.
            now = self.clock()
            self._refill(now)
            if self._bucket < 1 and client not in self._trusted:
                # Refused before the comparison: the same answer whatever was typed.
                wait = max(1, math.ceil((1 - self._bucket) * self.table_refill_s))
            else:
                wait = 0
                right = self._right(supplied)
                if right:
                    self._misses.pop(client, None)
                    self._trusted.pop(client, None)
                    if len(self._trusted) >= self.max_clients:
                        self._trusted.pop(next(iter(self._trusted)))
                    self._trusted[client] = None
                else:
                    alarm = self._count_miss(client, pin=True)
        if wait:
            raise ApiError(429, self.too_many, headers={"Retry-After": str(wait)}, seconds=wait)
        if right:
            return
        if alarm is not None and self.alarm is not None:
            self.alarm(alarm)
        raise ApiError(403, self.wrong)

    too_many = N_("too many wrong PINs at this table: wait {seconds} s (the PIN is on the box)")
    wrong = N_("wrong table PIN (it is shown on the box)")

    def _right(self, supplied: str) -> bool:
        return hmac.compare_digest(supplied.encode("utf-8", "replace"), self.pin.encode("utf-8"))

    def bound(self, seconds: float, trusted: int) -> int:
        """The most wrong PINs compared in ``seconds`` after a PIN is drawn
        (or the guard made), ``trusted`` addresses having shown it
        (docs/security.md, "The PIN and its limits")."""
        return self.table_burst + math.floor(seconds / self.table_refill_s) + trusted

    def miss(self, client: str, pin: bool = False) -> None:
        """Count one wrong credential from ``client`` (``pin``: a wrong PIN,
        which counts table-wide too); start a block at the limit."""
        with self._lock:
            alarm = self._count_miss(client, pin)
        if alarm is not None and self.alarm is not None:
            self.alarm(alarm)

    def _count_miss(self, client: str, pin: bool) -> int | None:
        """``miss`` under the lock; the wrong-PIN count to alarm with, if due."""
        alarm = None
        if len(self._misses) >= self.max_clients and client not in self._misses:
            self._misses.clear()        # a flood of addresses: forget, never grow
        count = self._misses.get(client, 0) + 1
        if count >= self.tries:
            self._misses.pop(client, None)
            if len(self._blocked) >= self.max_clients:
                now = self.clock()
                self._blocked = {c: t for c, t in self._blocked.items() if t > now}
            self._blocked[client] = self.clock() + self.block_s
        else:
            self._misses[client] = count
        if pin:
            now = self.clock()
            self._refill(now)
            # Whoever sent it: a right PIN shown before earns no allowance.
            # Below zero only through a trusted address, which loses its
            # trust here, so the debt is at most one per such address.
            self._bucket -= 1
            self._trusted.pop(client, None)
            self.wrong_pins += 1
            # 10 wrong PINs faster than the bucket refills: guessing, not
            # a typo now and then over an evening.
            _last_count, last_at = self._alarmed
            if self._bucket < self.table_burst - self.alarm_after + 1 and (
                    last_at is None or now - last_at >= self.alarm_every_s):
                self._alarmed = (self.wrong_pins, now)
                alarm = self.wrong_pins
        return alarm


class OwnerGuard(PinGuard):
    """The owner's password, throttled as the PIN is, and tighter: the
    system is the owner's, and each comparison is a slow hash.

    Per address: ``tries`` wrong in a row, then a block.  Table-wide, from
    any number of addresses: at most ``table_burst`` (10) wrong passwords
    compared, then one each ``table_refill_s`` (60 s); beyond that a
    request is refused *before* its password is compared (429), so 300
    wrong passwords from 30 addresses in a minute get at most 11 compared.
    An address that showed the right password keeps its way in.  The hash
    is read afresh at each comparison (set-up writes it; a reset removes it).
    """

    too_many = N_("too many wrong owner passwords: wait {seconds} s")
    wrong = N_("wrong owner password")

    def __init__(self, read_hash, **kw):
        kw.setdefault("table_burst", 10)
        kw.setdefault("table_refill_s", 60.0)
        kw.setdefault("tries", 5)
        kw.setdefault("block_s", 30.0)
        super().__init__("", **kw)
        self.read_hash = read_hash          # () -> the hash kept, or None
        self.compared = 0                   # comparisons made (wrong or right), for the tests and the bench

    def _right(self, supplied: str) -> bool:
        from appliance import owner

        self.compared += 1
        hashed = self.read_hash()
        return hashed is not None and owner.verify(supplied, hashed)


class SeatTokens:
    """The tokens of claimed seats.  The claim itself (a label, never the
    token) lives in ``session.table.claims`` so the box can show it."""

    def __init__(self, session):
        self.session = session
        self._tokens: dict[int, str] = {}

    # Every method runs under the session lock: claims and the game's seat
    # count change together with the table.

    def seat_count(self) -> int:
        return len(self.session.players)

    def claim(self, seat: int, label: str) -> str:
        with self.session.lock:
            self._check_seat(seat)
            if seat in self.session.table.claims:
                raise ApiError(409, N_("seat {seat} is already claimed: release it first (from the box or with the PIN)"),
                               seat=seat + 1)          # people count seats from 1 (docs/api.md)
            token = secrets.token_urlsafe(24)
            self._tokens[seat] = token
            self.session.update_table(lambda table: table.claims.__setitem__(seat, label))
            return token

    def release(self, seat: int) -> None:
        with self.session.lock:
            if seat not in self.session.table.claims:
                self._check_seat(seat)          # 404 for a seat that does not exist
            self._tokens.pop(seat, None)
            if seat in self.session.table.claims:
                self.session.update_table(lambda table: table.claims.pop(seat, None))

    def seat_of(self, token: str) -> int | None:
        """The seat ``token`` belongs to, if its claim still stands."""
        supplied = token.encode("utf-8", "replace")
        found = None
        with self.session.lock:
            for seat, known in self._tokens.items():      # compare with all: no early exit
                if hmac.compare_digest(supplied, known.encode()) and found is None:
                    found = seat
            if found is None or found not in self.session.table.claims or found >= self.seat_count():
                return None
            return found

    def forget_released(self) -> None:
        """Drop tokens whose claim was removed by someone else (the box)."""
        for seat in [s for s in self._tokens if s not in self.session.table.claims]:
            del self._tokens[seat]

    def _check_seat(self, seat: int) -> None:
        count = self.seat_count()
        if count == 0:
            raise ApiError(404, N_("no game yet: there are no seats to claim"))
        if not 0 <= seat < count:
            raise ApiError(404, N_("there is no seat {seat} at this table (seats 1 to {last})"),
                           seat=seat + 1, last=count)


def may_enter(game, state, action, seat: int) -> bool:
    """Whether a seat token of ``seat`` may submit ``action``: an action that
    names that seat, of the game's seat-entry types (or one the game calls a
    secret entry).  Everything else needs the PIN."""
    if game is None or not isinstance(action, dict):
        return False
    named = action.get("seat")
    if type(named) is not int or named != seat:
        return False
    kind = action.get("type")
    entries = getattr(game, "seat_entries", None) or SEAT_ENTRIES.get(game.id, set())
    if kind in entries:
        return True
    if not isinstance(kind, str) or kind not in game.moves:
        return False
    try:
        checked = game.check_action(action, len(state.players))
        return bool(game.is_secret(state, checked))
    except Exception:      # malformed: not one of its own entries
        return False


def clean_label(value) -> str | None:
    """A claim label from a phone: printable, trimmed, at most 24 characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, N_("'name' must be a string"))
    text = "".join(ch for ch in value if ch.isprintable()).strip()
    if len(text) > MAX_LABEL:
        raise ApiError(400, N_("'name' is longer than {n} characters"), n=MAX_LABEL)
    return text or None
