"""What a game is: a declaration the framework folds a log with.

In the spirit of boardgame.io a game declares its setup, its moves, its end
and its views; the log, undo, secrecy and replay come from the framework
(:mod:`companion.timeline`), never from each game.

A game's state is an immutable value (a frozen dataclass of tuples) with at
least two fields:

``players``
    the names, in seat order (play order);
``hidden``
    a mapping of the secret entries not yet revealed.  Its *keys* are public
    (that a seat has entered something), its *values* are not.  A key is a
    seat number, or any hashable whose owner :meth:`Game.secret_owner` names.

A move function ``apply(state, action) -> state`` gets an action whose fields
were already checked against the move's :class:`~companion.fields.Field`
specs; it returns a *new* state or raises
:class:`~companion.errors.IllegalActionError`.  It must never mutate
``state``.

Public views are built by :meth:`Game.public_view` from a state whose
``hidden`` has been replaced by a :class:`Sealed` wrapper: reading a value
raises :class:`SecretAccess`, so a public view *cannot* leak a secret.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping

from ..fields import Context, Field, check_record


class SecretAccess(RuntimeError):
    """A public view tried to read an unrevealed secret (a programming error)."""


class Sealed(Mapping):
    """The ``hidden`` mapping as public code sees it: keys yes, values never."""

    __slots__ = ("_keys",)

    def __init__(self, hidden: Mapping):
        self._keys = tuple(hidden.keys())

    def __contains__(self, key) -> bool:
        return key in self._keys

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self):
        return list(self._keys)

    def __getitem__(self, key):
        raise SecretAccess("a public view must not read secret values")

    def values(self):
        raise SecretAccess("a public view must not read secret values")

    def items(self):
        raise SecretAccess("a public view must not read secret values")

    def get(self, key, default=None):
        raise SecretAccess("a public view must not read secret values")

    def __repr__(self) -> str:
        return f"Sealed({list(self._keys)!r})"


@dataclass(frozen=True)
class Move:
    """One action type of a game: its fields and the rules function."""

    fields: Mapping[str, Field]
    apply: Callable[[Any, dict], Any]


class Game:
    """Base of every game declaration.  Subclasses set the class attributes
    and implement :meth:`setup`, :meth:`public_view`, :meth:`is_finished`
    and usually :meth:`seat_view` and :meth:`is_secret`."""

    id: str = ""
    title: str = ""          # English title, marked with N_ for translation
    min_players: int = 1
    max_players: int = 8
    options: Mapping[str, Field] = {}
    moves: Mapping[str, Move] = {}

    # -- the declaration ---------------------------------------------------
    def setup(self, players: tuple[str, ...], options: dict):
        """The state at the start of the game."""
        raise NotImplementedError

    def public_view(self, state) -> dict:
        """The public state: exactly the keys of the replay contract.
        ``state.hidden`` is :class:`Sealed` here."""
        raise NotImplementedError

    def seat_view(self, state, seat: int, own: Mapping) -> dict:
        """What ``seat`` alone may see besides the public view: ``own`` holds
        only that seat's unrevealed entries (key -> value)."""
        return {"secret": {_key_text(k): v for k, v in own.items()}}

    def is_finished(self, state) -> bool:
        raise NotImplementedError

    def is_secret(self, state, action: dict) -> bool:
        """Whether ``action`` (already checked, about to be applied to
        ``state``) is a secret entry whose value must not be shown publicly."""
        return False

    def secret_owner(self, key: Hashable) -> int:
        """The seat that owns the hidden entry ``key`` (default: the key is the seat)."""
        return key

    # -- helpers the framework uses ----------------------------------------
    def check_action(self, action: Mapping, seats: int) -> dict:
        move = self.moves[action["type"]]
        checked = check_record(action, move.fields, Context(seats), skip=("type",))
        checked["type"] = action["type"]
        return checked

    def sealed(self, state):
        return dataclasses.replace(state, hidden=Sealed(state.hidden))

    def public(self, state) -> dict:
        return self.public_view(self.sealed(state))

    def private(self, state, seat: int) -> dict:
        own = {k: v for k, v in state.hidden.items() if self.secret_owner(k) == seat}
        view = self.public(state)
        view.update(self.seat_view(self.sealed(state), seat, own))
        view["seat"] = seat
        return view


def _key_text(key) -> str:
    if isinstance(key, tuple):
        return ":".join(str(k) for k in key)
    return str(key)
