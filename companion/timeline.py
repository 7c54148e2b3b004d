"""A game as the fold of its log.

A :class:`Timeline` takes action objects one at a time (the JSON Lines of
``docs/replay.md``), checks each against the common actions
(``new_game``, ``undo``) and the game's declaration, and keeps the stack of
states of the actions still in effect, so that ``undo`` is a pop.  Nothing
changes when an action is refused: :meth:`Timeline.check` computes the next
step without touching the timeline, :meth:`Timeline.push` commits it.

Taken back means gone: a secret entry that ``undo`` takes back before it was
ever revealed leaves the log together with that ``undo`` (undo pops a stack,
so the log without the pair folds to the very same states).  ``Timeline.log``
is therefore always the *public log* of ``docs/replay.md``'s game:
an entry revealed once (even if the reveal was undone later) stays in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import clock as turn_clock
from . import games
from .errors import GameOver, IllegalActionError, InvalidActionError, NothingToUndo
from .fields import Context, Field, List, Str, check_record
from .i18n import N_

MAX_NAME = 24


@dataclass(frozen=True)
class Step:
    """One action in effect: the checked action, the state after it, and
    whether it was a secret entry."""

    action: dict
    state: Any
    secret: bool = False
    line: int = 0                     # index in ``Timeline.log`` of the action
    adds: frozenset = frozenset()     # the hidden keys this entry added
    clock: dict | None = None         # the turn clock's record in effect (companion/clock.py)


@dataclass(frozen=True)
class Pending:
    """The result of :meth:`Timeline.check`: what :meth:`Timeline.push` will do."""

    action: dict          # the action as given (what is logged)
    step: Step | None     # the new top of the stack, or None for undo
    drops: int | None = None  # undo only: index in the log of the secret entry it
                              # takes back unrevealed (the pair leaves the log)


def parse_line(text: str) -> dict:
    """One log line to an action object, or an InvalidActionError."""
    try:
        action = json.loads(text)
    except (ValueError, RecursionError) as exc:
        # In words a person reads in any language (Python's own are English):
        # where the line goes wrong, as a place in it.
        where = getattr(exc, "colno", None)
        if where is None:
            raise InvalidActionError(N_("this line is not written as an action")) from None
        raise InvalidActionError(N_("this line is not written as an action (it goes wrong at its character {n})"),
                                 n=where) from None
    if not isinstance(action, dict):
        raise InvalidActionError(N_("an action must be a JSON object"))
    return action


_NEW_GAME = {
    "game": Str(),
    "players": List(Str(), min_len=1),
}


class Timeline:
    """The log of one game and the states it folds to."""

    def __init__(self):
        self.game: games.Game | None = None
        self.steps: list[Step] = []     # steps[0] is new_game
        self.log: list[dict] = []       # the public log: every accepted action, undo included,
                                        # but for the pairs (unrevealed entry, undo taking it back)
        self.revealed: set[int] = set()  # log indexes of secret entries revealed at least once
        self.pushes = 0                 # steps committed so far: grows with every change, even
                                        # when an undo shortens the log (caches key on it)

    # -- reading -----------------------------------------------------------
    @property
    def state(self):
        return self.steps[-1].state if self.steps else None

    @property
    def started(self) -> bool:
        return bool(self.steps)

    @property
    def finished(self) -> bool:
        return bool(self.steps) and self.game.is_finished(self.state)

    @property
    def clock(self) -> dict | None:
        """The turn clock's record in effect (None: no clock in this game)."""
        return self.steps[-1].clock if self.steps else None

    def public(self) -> dict:
        """The public state (the keys ``companion replay`` prints); a game
        with a turn clock also has ``clock``, its record in effect (a log
        without one prints exactly what it always did)."""
        if not self.steps:
            return {"game": None}
        public = self.game.public(self.state)
        if self.steps[-1].clock is not None:
            public["clock"] = dict(self.steps[-1].clock)
        return public

    def private(self, seat: int) -> dict:
        """The view of ``seat``: the public state plus its own secrets."""
        if not self.steps:
            return {"game": None}
        return self.game.private(self.state, seat)

    @property
    def players(self) -> tuple[str, ...]:
        return self.state.players if self.steps else ()

    # -- writing -----------------------------------------------------------
    def check(self, action: Any) -> Pending:
        """Validate ``action`` against the current state; raise or return
        what :meth:`push` would commit.  The timeline is not changed."""
        if not isinstance(action, dict):
            raise InvalidActionError(N_("an action must be a JSON object"))
        kind = action.get("type")
        if not isinstance(kind, str):
            raise InvalidActionError(N_("the action has no 'type'"))
        if kind == "new_game":
            return Pending(action, self._check_new_game(action))
        if not self.steps:
            raise IllegalActionError(N_("no game yet: the first action must be new_game"))
        if kind == "undo":
            check_record(action, {}, Context(), skip=("type",))
            if len(self.steps) < 2:
                raise NothingToUndo()
            top = self.steps[-1]
            taken_back = top.secret and top.adds and top.line not in self.revealed
            return Pending(action, None, top.line if taken_back else None)
        if kind == "clock":
            # The turn clock's handover (docs/replay.md, "The turn clock"):
            # the game's state does not move, only the clock's record.
            if self.game.is_finished(self.state):
                raise GameOver()
            record = turn_clock.check_record_of(action, len(self.players))
            return Pending(action, Step(action, self.state, False, len(self.log), clock=record))
        if kind not in self.game.moves:
            raise InvalidActionError(N_("unknown action '{type}' for {game}"), type=kind, game=self.game.id)
        state = self.state
        if self.game.is_finished(state):
            raise GameOver()
        record = self.steps[-1].clock
        if "clock" in action and self.game.id in turn_clock.FOLLOWED:
            # A move that also hands the clock on (a game with its own turn
            # order): the record rides on the move, so that one undo takes
            # back both.
            record = turn_clock.check_record_of(action["clock"], len(self.players), where="clock")
            action_only = {k: v for k, v in action.items() if k != "clock"}
        else:
            action_only = action
        checked = self.game.check_action(action_only, len(self.players))
        secret = bool(self.game.is_secret(state, checked))
        new_state = self.game.moves[kind].apply(state, checked)
        adds = frozenset(new_state.hidden.keys() - state.hidden.keys()) if secret else frozenset()
        return Pending(action, Step(checked, new_state, secret, len(self.log), adds, clock=record))

    def push(self, pending: Pending) -> None:
        """Commit a step returned by :meth:`check` (on this same state)."""
        self.pushes += 1
        if pending.step is None:
            self.steps.pop()
            if pending.drops is not None:
                self._drop(pending.drops)
                return
        else:
            if pending.action.get("type") == "new_game":
                self.game = games.get(pending.action["game"])
            else:
                self._note_reveals(pending.step.state)
            self.steps.append(pending.step)
        self.log.append(pending.action)

    def _note_reveals(self, new_state) -> None:
        """Mark as revealed the entries whose hidden keys ``new_state`` no
        longer holds (any way out of ``hidden`` but an undo is a reveal)."""
        hidden = self.state.hidden
        if not hidden:              # the common case: nothing to reveal, nothing to compute
            return
        gone = hidden.keys() - new_state.hidden.keys()
        for key in gone:
            for step in reversed(self.steps):     # the latest entry that set the key
                if key in step.adds:
                    self.revealed.add(step.line)
                    break

    def _drop(self, line: int) -> None:
        """Take the unrevealed entry at ``line`` out of the log (its undo is
        not logged either).  Every step still in effect is below it, so no
        step's ``line`` moves; only popped entries' indexes shift down."""
        del self.log[line]
        self.revealed = {i - (i > line) for i in self.revealed if i != line}

    def unrevealed(self) -> list[int]:
        """Log indexes of the secret entries in effect that were never revealed."""
        return [step.line for step in self.steps
                if step.secret and step.adds and step.line not in self.revealed]

    def apply(self, action: Any):
        """Check and commit ``action``; return the new state."""
        self.push(self.check(action))
        return self.state

    def _check_new_game(self, action: dict) -> Step:
        if self.steps:
            raise IllegalActionError(N_("this log already holds a game: a second new_game is not allowed"))
        fields = dict(_NEW_GAME)
        fields["options"] = _Options()
        checked = check_record(action, fields, Context(), skip=("type",))
        game = games.get(checked["game"])
        players = checked["players"]
        for name in players:
            if not name.strip():
                raise InvalidActionError(N_("player names must not be empty"))
            if len(name) > MAX_NAME:
                raise InvalidActionError(N_("the player name '{name}' is longer than {n} characters"), name=name, n=MAX_NAME)
        if len(set(players)) != len(players):
            raise InvalidActionError(N_("player names must be distinct"))
        if not game.min_players <= len(players) <= game.max_players:
            if game.min_players == game.max_players:
                raise InvalidActionError(N_("{game} needs exactly {n} players, got {got}"),
                                         game=game.id, n=game.min_players, got=len(players))
            raise InvalidActionError(N_("{game} needs {lo} to {hi} players, got {got}"),
                                     game=game.id, lo=game.min_players, hi=game.max_players, got=len(players))
        options = check_record(checked["options"] or {}, game.options, Context(len(players)), where="options")
        state = game.setup(tuple(players), options)
        checked["options"] = options
        return Step(checked, state, False)


class _Options(Field):
    """``options``: an object checked later against the game's own specs."""

    def __init__(self):
        super().__init__(required=False, default=None)

    def convert(self, value, name, ctx):
        if not isinstance(value, dict):
            raise InvalidActionError(N_("'options' must be an object"))
        return value


def replay(lines) -> Timeline:
    """Fold an iterable of log lines (strings); raise ``ReplayError`` at the
    first bad one with its 1-based line number."""
    timeline = Timeline()
    seen = False
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        seen = True
        try:
            timeline.apply(parse_line(text))
        except InvalidActionError as exc:
            raise ReplayError(number, exc) from None
        except IllegalActionError as exc:
            raise ReplayError(number, exc) from None
    if not seen:
        raise ReplayError(1, InvalidActionError(N_("the log is empty: it must start with new_game")))
    return timeline


class ReplayError(Exception):
    """A log line was refused: ``line`` is 1-based, ``error`` the reason."""

    def __init__(self, line: int, error):
        self.line = line
        self.error = error
        super().__init__(f"line {line}: {error}")
