"""The table session: the one writer of the current game.

Buttons, phones and the command line all hand actions to
:meth:`TableSession.submit`.  Under one lock it checks the action against the
current state, appends it durably to the store, folds it into the timeline
and then tells every subscriber (the OLED, the event streams) about the new
state.  Nothing is stored or announced for a refused action.

Subscribers are plain callables taking a :class:`Change`; they run in the
submitting thread, in order, so they must be quick (hand the change to their
own thread or wake a waiter; never block on I/O).

**Claims and table entries.**  A phone's claim on a seat (``table.claims``)
belongs to one game: a new game or a resumed one ends every claim, unless
the ``new_game`` action says ``"keep_claims": true`` (the table's explicit
"same phones, same chairs"; the key is not stored in the game's log).  A
secret entered at the table — on the box's buttons, or with the PIN — rather
than by the seat's own phone (source ``"seat"``) is remembered as such until
it is revealed or taken back: :meth:`TableSession.private` with
``phone=True`` (what a seat token reads) leaves it out, so a phone that
claimed the seat before the entry (anyone can read the PIN off the box)
never reads it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable

from . import names
from . import timeline as tl
from . import clock as turn_clock
from .clock import TurnClock
from .errors import ActionError, IllegalActionError, InvalidActionError, StoreError
from .i18n import N_
from .limits import MAX_GAME_LINES
from .store import Store, dump_action

log = logging.getLogger("companion.session")


@dataclass(frozen=True)
class Change:
    """What subscribers are told after every change of the table."""

    version: int            # increases by one with every change, never repeats in a process
    kind: str               # "action", "undo", "new_game", "resume", "table"
    state: dict             # the public state after the change
    action_type: str | None = None
    secret: bool = False    # the change was a secret entry (its value is NOT in here)
    seat: int | None = None  # the seat that acted, where the action names one
    clock: dict | None = None  # the live turn clock (companion/clock.py, TurnClock.live), if set


@dataclass
class TableInfo:
    """Ephemeral facts about the table that are not part of any game log:
    which phone claimed which seat, notices to show.  Adapters change it
    through :meth:`TableSession.update_table` so that everyone is told."""

    claims: dict = field(default_factory=dict)      # seat -> claim label (never a token)
    notices: list = field(default_factory=list)     # (template, params)


class TableSession:
    def __init__(self, store: Store):
        self.store = store
        self.lock = threading.RLock()
        self.timeline = tl.Timeline()
        self.game_id: int | None = None
        self.version = 0
        self.table = TableInfo(notices=list(store.warnings))
        self.table_entries: set = set()  # hidden keys entered at the table (buttons, PIN), not by the seat's phone
        self._subscribers: list[Callable[[Change], None]] = []
        # The live turn clock: what the log's latest record does not hold
        # (when the running turn began, a pause).  A game picked up after a
        # restart starts paused, as it was at its last handover.
        self.clock = TurnClock()
        self._clock_run: bool | None = None   # the next handover's running state (None: as it was)
        self._clock_between = False           # the game stopped a running clock (nobody's turn)
        self._resume()
        self.clock.follow(self.timeline.clock, False)

    # -- start ----------------------------------------------------------------
    def _resume(self) -> None:
        """Pick up the most recent unfinished game, if any."""
        record = self.store.latest_unfinished()
        if record is None:
            return
        timeline = tl.Timeline()
        lines = self.store.lines(record.id)
        broken = False
        for n, line in enumerate(lines, start=1):
            try:
                timeline.apply(tl.parse_line(line))
            except ActionError as exc:
                # A stored line that no longer replays (should never happen):
                # keep the prefix that does, and say so.
                log.error("game %s line %s does not replay: %s", record.id, n, exc)
                self.table.notices.append((N_("Game {id} came back only up to its step {n}: the steps after it could not be read."),
                                           {"id": record.id, "n": n - 1}))
                broken = True
                break
        if timeline.started:
            self.timeline, self.game_id = timeline, record.id
            if broken:
                self._fork(record)
            elif len(timeline.log) != len(lines):
                # A pair taken back that the store still held (its tidying
                # failed): store the public log, so line numbers agree.
                try:
                    self.store.rewrite(record.id, [dump_action(a) for a in timeline.log])
                except StoreError as exc:
                    log.error("could not tidy game %s: %s", record.id, exc)
                    self._fork(record)

    def _fork(self, record) -> None:
        """Go on from the part of a game that replays, as a new stored game.

        Appending after the replayable prefix would collide with the stored
        line that does not replay (same number): every action would then be
        refused.  The old game keeps its lines, bad one included, for
        ``companion export``; the copy is the newest unfinished game."""
        lines = [dump_action(a) for a in self.timeline.log]
        game = self.timeline.game
        try:
            game_id = self.store.create_game(record.game, self.timeline.players, lines[0])
            for seq, line in enumerate(lines[1:], start=2):
                last = seq == len(lines)
                finished = last and game.is_finished(self.timeline.state)
                self.store.append(game_id, seq, line, finished,
                                  game.public(self.timeline.state).get("winner") if finished else None)
        except StoreError as exc:
            log.error("could not copy the replayable part of game %s: %s", record.id, exc)
            return
        log.warning("game %s goes on as game %s (its first %s lines)", record.id, game_id, len(lines))
        self.game_id = game_id

    # -- reading --------------------------------------------------------------
    def public(self) -> dict:
        with self.lock:
            return self.timeline.public()

    def private(self, seat: int, *, phone: bool = False) -> dict:
        """The view of ``seat``.  ``phone=True``: as its seat token may read
        it, with only the entries that phone made itself: an entry made at
        the table (the buttons, or the PIN, which the box shows to all) stays
        unread until the reveal, whoever claimed the seat; the view then says
        ``"entered_at_table": true``."""
        with self.lock:
            if not self.timeline.started or not 0 <= seat < len(self.timeline.players):
                return {"game": None} if not self.timeline.started else self.timeline.public()
            game, state = self.timeline.game, self.timeline.state
            at_table = {k for k in self.table_entries & _hidden_keys(state) if game.secret_owner(k) == seat}
            if not phone or not at_table:
                return self.timeline.private(seat)
            own = {k: v for k, v in state.hidden.items() if game.secret_owner(k) == seat and k not in at_table}
            view = game.public(state)
            view.update(game.seat_view(game.sealed(state), seat, own))
            view["seat"] = seat
            view["entered_at_table"] = True
            return view

    def snapshot(self) -> tuple[int, dict]:
        """(version, public state), consistent with each other."""
        with self.lock:
            return self.version, self.timeline.public()

    @property
    def game(self):
        return self.timeline.game

    @property
    def players(self) -> tuple[str, ...]:
        return self.timeline.players

    # -- writing --------------------------------------------------------------
    def submit(self, action, source: str = "") -> dict:
        """Apply one action from any source; return the new public state.
        Raises ActionError (refused, nothing changed) or StoreError."""
        with self.lock:
            if isinstance(action, dict) and action.get("type") == "new_game":
                return self._new_game(action)
            self._refuse_beyond_largest_game()
            pending = self.timeline.check(action)
            followed = self._clock_on_move(action, pending)
            if followed is not None:
                action, pending = followed
            seq = len(self.timeline.log) + 1
            nxt_finished, winner = self._outcome_after(pending)
            before = _hidden_keys(self.timeline.state)
            public = self._public_after(pending)      # the listing's summary, kept with the line
            if pending.drops is not None:
                # Undo of a secret entry never revealed: the entry leaves the
                # store with it (taken back means gone), in one transaction.
                self.store.take_back(self.game_id, pending.drops + 1, nxt_finished, winner, public)
            else:
                self.store.append(self.game_id, seq, dump_action(action), nxt_finished, winner, public)
            self.timeline.push(pending)
            self._track_table_entries(before, source)
            if nxt_finished:
                self.store.backup(self.game_id)
            kind = "undo" if pending.step is None else "clock" if action.get("type") == "clock" else "action"
            secret = bool(pending.step and pending.step.secret)
            seat = action.get("seat") if isinstance(action.get("seat"), int) else None
            return self._announce(kind, action.get("type"), secret, seat)

    # -- the turn clock -------------------------------------------------------
    def _clock_on_move(self, action: dict, pending: tl.Pending):
        """In a game with a turn order of its own and a clock set, a move that
        passes the turn hands the clock on too: the new record rides on the
        move's line (``"clock"``), so one undo gives both back.  Returns the
        (action, pending) to store instead, or None."""
        record = self.timeline.clock
        if (record is None or pending.step is None or action.get("type") == "clock" or "clock" in action
                or self.timeline.game.id not in turn_clock.FOLLOWED):
            return None
        turn = turn_clock.followed_turn(self.timeline.game.public(pending.step.state))
        if turn == record["turn"]:
            return None                 # the same seat goes on: its time keeps running
        if turn is None:
            # Nobody's turn for a while (Yenta between hands): the clock
            # stands, and starts again with the next seat the game names.
            self._clock_between = self.clock.running
        elif record["turn"] is None and self._clock_between:
            self._clock_run, self._clock_between = True, False
        action = dict(action, clock=self.clock.handover(turn))
        return action, self.timeline.check(action)

    def clock_set(self, mode: str, bank_ms: int, extra_ms: int, source: str = "") -> dict:
        """Set a turn clock for the game in play and start it: every seat gets
        ``bank_ms``; it runs for the game's own turn, else for the first seat
        in play.  Refused (nothing changes) like any action."""
        with self.lock:
            if not self.timeline.started:
                raise IllegalActionError(N_("no game yet: start a game before its clock"))
            public = self.timeline.public()
            seats = len(self.timeline.players)
            if self.timeline.game.id in turn_clock.FOLLOWED:
                turn = turn_clock.followed_turn(public)
                self._clock_between = turn is None      # starts with the first seat the game names
            else:
                turn = (turn_clock.seats_in_play(public) or [None])[0]
            record = turn_clock.new_record(mode, bank_ms, extra_ms, seats, turn)
            self._clock_run = True
            try:
                return self.submit({"type": "clock", **record}, source)
            finally:
                self._clock_run = None

    def clock_end_turn(self, seat: int | None = None, source: str = "") -> dict:
        """The running seat ends its turn (``seat``: only if it is that seat's
        turn): the next seat in turn order that is in play and has time left
        starts.  Refused in a game whose own moves pass the turn."""
        with self.lock:
            record = self.timeline.clock
            if record is None:
                raise IllegalActionError(N_("no turn clock is set"))
            if self.timeline.game.id in turn_clock.FOLLOWED:
                raise IllegalActionError(N_("in this game the clock follows the game's turns: enter the move"))
            if seat is not None and seat != record["turn"]:
                raise IllegalActionError(N_("it is not seat {seat}'s turn on the clock"), seat=seat + 1)
            to = turn_clock.next_seat(self.timeline.public(), self.clock.handover(None), self.clock.after())
            if to is None:
                raise IllegalActionError(N_("no seat has time left on the clock"))
            self._clock_run = True
            try:
                return self.submit({"type": "clock", **self.clock.handover(to)}, source)
            finally:
                self._clock_run = None

    def clock_pause(self) -> bool:
        """Stop the running time (not logged: the log keeps handovers only)."""
        with self.lock:
            if not self.clock.pause():
                return False
            self._announce("clock", None, False, None)
            return True

    def clock_resume(self) -> bool:
        with self.lock:
            if self.clock.flagged() is not None or not self.clock.resume():
                return False
            self._announce("clock", None, False, None)
            return True

    def clock_tick(self) -> int | None:
        """Look whether the running bank ran out (the box calls this when the
        shown second changes); if it did, log it — that seat at 0, nobody
        running — and return the seat."""
        with self.lock:
            seat = self.clock.flagged()
            if seat is None or not self.clock.running:
                return None
            self._clock_run = False
            try:
                self.submit({"type": "clock", **self.clock.handover(None)}, "clock")
            except ActionError:        # the game just ended: nothing runs out any more
                log.debug("flag of seat %s not logged", seat)
                self.clock.pause()
                return None
            finally:
                self._clock_run = None
            return seat

    def _refuse_beyond_largest_game(self) -> None:
        """Refuse any line after the largest game the box stores
        (:data:`companion.limits.MAX_GAME_LINES`): every route that reads a
        stored game then answers within a bounded time.  An ``undo`` is a
        line too; a new game is always possible."""
        if len(self.timeline.log) >= MAX_GAME_LINES:
            raise IllegalActionError(N_("this game has reached the largest size the box stores "
                                        "({n} lines): start a new game"), n=MAX_GAME_LINES)

    def _track_table_entries(self, before: set, source: str) -> None:
        """Remember which hidden entries were made at the table (on the buttons,
        or with the PIN that the box shows to all) rather than by the seat's own
        phone; forget those revealed or taken back (a key entered again comes
        from its new source)."""
        now = _hidden_keys(self.timeline.state)
        added = now - before
        if source != "seat":
            self.table_entries |= added
        else:
            self.table_entries -= added
        self.table_entries &= now

    def _public_after(self, pending: tl.Pending) -> dict:
        """The public state the stored log folds to once ``pending`` is in
        (an undo: the state before the step it takes back; a take-back drops
        the pair, which leaves that same state)."""
        if pending.step is None:
            steps = self.timeline.steps[:-1]
            return self.timeline.game.public(steps[-1].state) if steps else {"game": None}
        return self.timeline.game.public(pending.step.state)

    def _outcome_after(self, pending: tl.Pending):
        """(finished, winner) of the state the pending step leads to."""
        if pending.step is None:
            steps = self.timeline.steps[:-1]
            state = steps[-1].state
        else:
            state = pending.step.state
        game = self.timeline.game
        if game.is_finished(state):
            return True, game.public(state).get("winner")
        return False, None

    def _new_game(self, action: dict) -> dict:
        action = dict(action)
        keep = action.pop("keep_claims", False)     # the table's choice, not part of the log
        if not isinstance(keep, bool):
            raise InvalidActionError(N_("'keep_claims' must be true or false"))
        players = action.get("players")
        if isinstance(players, list) and all(isinstance(p, str) for p in players):
            # Names the table can tell apart (companion/names.py): tidied
            # before the log keeps them, look-alikes refused.
            action["players"] = [names.tidy(p) for p in players]
        fresh = tl.Timeline()
        pending = fresh.check(action)      # raises on bad players/options: nothing changes
        names.refuse_lookalikes(list(action["players"]), list(self.store.roster_names().values()))
        fresh.push(pending)
        game_id = self.store.create_game(action["game"], fresh.players, dump_action(action), fresh.public(),
                                         keep=(self.game_id,) if self.game_id is not None else ())
        self.timeline, self.game_id = fresh, game_id
        self._end_game_facts(keep)
        return self._announce("new_game", "new_game", False, None)

    def _end_game_facts(self, keep_claims: bool) -> None:
        """Another game at the table: its seats' tokens end (unless kept on
        purpose), and no entry of the old game is a box entry any more."""
        self.table_entries = set()
        if not keep_claims:
            self.table.claims.clear()

    def _follow_clock(self, kind: str) -> None:
        """Keep the live clock on the log's latest clock record.  A new record
        (a handover, an undo that gives the previous one back) starts its
        turn now, running as the clock was unless the change said otherwise
        (``_clock_run``); a move that left the record alone changes nothing.
        Another game at the table: its clock (if any) stands paused."""
        record = self.timeline.clock
        if kind in ("new_game", "resume"):
            self.clock.follow(record, False)
        elif record is not self.clock.record:
            run = self.clock.running if self._clock_run is None else self._clock_run
            undone = self.clock.record if kind == "undo" else None
            charged = self.clock.given_back(undone, record) if undone and record else 0
            self.clock.follow(record, run, charged)
        if self.timeline.started and self.timeline.finished:
            self.clock.pause()          # the game is over: nobody's time runs any more
        self._clock_run = None

    def _announce(self, kind, action_type, secret, seat) -> dict:
        self.version += 1
        self._follow_clock(kind)
        state = self.timeline.public()
        change = Change(self.version, kind, state, action_type, secret, seat, self.clock.live())
        for callback in list(self._subscribers):
            try:
                callback(change)
            except Exception:  # a broken screen must never undo a stored action
                log.exception("subscriber %r failed", callback)
        return state

    def update_table(self, mutate: Callable[[TableInfo], None]) -> None:
        """Change the table info (claims, notices) and tell everyone."""
        with self.lock:
            mutate(self.table)
            self._announce("table", None, False, None)

    def subscribe(self, callback: Callable[[Change], None]) -> Callable[[], None]:
        """Call ``callback`` after every change; returns the unsubscribe function."""
        with self.lock:
            self._subscribers.append(callback)

        def unsubscribe():
            with self.lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)
        return unsubscribe

    def resume(self, game_id: int) -> dict:
        """Make a stored game the current one again (the current one stays
        stored as it is).  Raises IllegalActionError for an unknown game."""
        with self.lock:
            record = self.store.game(game_id)
            if record is None:
                raise IllegalActionError(N_("there is no stored game {id}"), id=game_id)
            try:
                timeline = tl.replay(self.store.lines(game_id))
            except tl.ReplayError as exc:   # a log damaged by hand: say so, change nothing
                raise IllegalActionError(N_("game {id} cannot be resumed: its step {line} can no longer be read"),
                                         id=game_id, line=exc.line) from None
            self.timeline, self.game_id = timeline, game_id
            self._end_game_facts(False)
            return self._announce("resume", None, False, None)

    def import_log(self, lines) -> int:
        """Validate a whole log like ``companion replay`` and store it as a new
        game; returns its id.  Raises ReplayError (nothing stored)."""
        timeline = tl.replay(lines)      # raises ReplayError with the line number
        actions = [dump_action(a) for a in timeline.log]
        public = timeline.public()
        with self.lock:
            return self.store.import_game(timeline.game.id, timeline.players, actions,
                                          bool(public.get("finished")), public.get("winner"), public,
                                          keep=(self.game_id,) if self.game_id is not None else ())

    # -- the stored games -----------------------------------------------------
    def export_lines(self, game_id: int | None = None) -> list[str]:
        with self.lock:
            return self.store.lines(self.game_id if game_id is None else game_id)


def _hidden_keys(state) -> set:
    """The keys of a game state's unrevealed entries (games without any have none)."""
    return set(getattr(state, "hidden", None) or ())
