"""The table's players: a roster kept in the game store.

A name is typed once (on a phone, or at a new game) and from then on it is
one of the table's players: the box offers it at every new game, with the
players of the last game first, and the statistics and the history count
per roster player, not per spelling.

* Each seat of each stored game belongs to a roster player (the store's
  ``roster_seats``): the game's log keeps the names it was played under
  (the replay contract), so a **rename** changes only the roster, and the
  history and statistics show the new name for every past game.
* A **merge** folds one entry into another (a player typed twice: "Zoe"
  and "Zoë"): their games become one player's.
* Two names are the same player when their identity matches
  (:func:`companion.stats.player_key`: NFC, case folded, trimmed), and a
  name that only *looks* like a player's ("Bеn" with a Cyrillic е, "J0" for
  "Jo") is refused (:mod:`companion.names`).
* The settings' ``names`` only seed an empty roster (:meth:`Roster.seed`).

The store is not thread-safe by itself: every call here runs under the
table session's lock, as the session's own writes do.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from .errors import IllegalActionError, InvalidActionError
from .i18n import N_
from .names import looks, tidy
from .stats import player_key
from .text import unsafe_char
from .timeline import MAX_NAME

MAX_PLAYERS = 500        # the roster's size: a box list and a phone page stay usable
SEEDED = 0.0             # the "added" time of a name from the settings: older than any typed one


class NoSuchPlayer(IllegalActionError):
    """An id that is not (or no longer: merged) on the roster."""

    def __init__(self, player_id):
        super().__init__(N_("there is no player {id} on the roster"), id=player_id)


@dataclass(frozen=True)
class Player:
    id: int
    name: str
    games: int           # stored games played, finished or not
    last: float | None   # when their last game was last played, None if never

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "games": self.games, "last": self.last}


def clean_name(name) -> str:
    """A name as the roster keeps it: NFC (an accent typed as a combining
    mark draws whole on the box), invisible characters taken out, trimmed
    (:func:`companion.names.tidy`), 1 to MAX_NAME characters, no control or
    direction character.  Raises InvalidActionError."""
    if not isinstance(name, str):
        raise InvalidActionError(N_("a player's name must be text"))
    found = unsafe_char(unicodedata.normalize("NFC", name))
    if found:
        raise InvalidActionError(N_("'{where}' holds the character {char}: names and labels must not "
                                    "hold control or text-direction characters"), where="name", char=found)
    name = tidy(name)
    if not name:
        raise InvalidActionError(N_("player names must not be empty"))
    if len(name) > MAX_NAME:
        raise InvalidActionError(N_("the player name '{name}' is longer than {n} characters"), name=name, n=MAX_NAME)
    return name


class Roster:
    """The roster of the table whose session is ``session``."""

    def __init__(self, session):
        self.session = session

    @property
    def store(self):
        return self.session.store

    # -- reading ---------------------------------------------------------------
    def players(self) -> list[Player]:
        """The roster in the box's order: the last game's players in their
        seats' order; then the names typed since the last game was played,
        in the order they were typed (a table types its names, then picks
        them); then everyone else, the most recently played first; the
        settings' seeds that never played last, in the settings' order."""
        with self.session.lock:
            records = self.store.roster()
            last_game = self._last_game()
            first = self.store.seat_players(last_game).get(last_game, []) if last_game is not None else []
        by_id = {r.id: r for r in records}
        ordered = [by_id[pid] for pid in dict.fromkeys(first) if pid in by_id]
        rest = [r for r in records if r.id not in set(first)]
        latest = max((r.last for r in records if r.last is not None), default=0.0)
        fresh = [r for r in rest if r.last is None and r.added > latest]
        others = sorted((r for r in rest if r not in fresh), key=lambda r: (-(r.last or r.added), r.id))
        return [Player(r.id, r.name, r.games, r.last) for r in ordered + fresh + others]

    def _last_game(self) -> int | None:
        """The game at the table, else the last one played."""
        if self.session.game_id is not None:
            return self.session.game_id
        newest, _total = self.store.page(0, 1)        # one row, not the whole store
        return newest[0].id if newest else None

    def names(self) -> list[str]:
        return [p.name for p in self.players()]

    def last_names(self) -> list[str]:
        """The roster names of the last game's seats, in seat order (a
        player renamed since is offered under the new name)."""
        with self.session.lock:
            last_game = self._last_game()
            if last_game is None:
                return []
            ids = self.store.seat_players(last_game).get(last_game, [])
            names = self.store.roster_names()          # no game counts: the box asks this
        return [names[pid] for pid in ids if pid in names]

    def get(self, player_id: int) -> Player:
        for player in self.players():
            if player.id == player_id:
                return player
        raise NoSuchPlayer(player_id)

    def names_by_id(self) -> dict[int, str]:
        with self.session.lock:
            return self.store.roster_names()

    # -- writing ---------------------------------------------------------------
    def add(self, name) -> Player:
        """A new player; a name that is already there (the same identity)
        is refused with a clear message, not added twice."""
        name = clean_name(name)
        with self.session.lock:
            records = self.store.roster()
            self._refuse_taken(records, name, N_("{name} is already on the roster (player {id})"))
            if len(records) >= MAX_PLAYERS:
                raise IllegalActionError(N_("the roster is full ({n} players): merge some first"), n=MAX_PLAYERS)
            player_id = self.store.add_player(name)
        return self.get(player_id)

    def rename(self, player_id: int, name) -> Player:
        """A new name for a player: every past game shows it, their logs unchanged."""
        name = clean_name(name)
        with self.session.lock:
            records = self.store.roster()
            if not any(r.id == player_id for r in records):
                raise NoSuchPlayer(player_id)
            self._refuse_taken([r for r in records if r.id != player_id], name,
                               N_("{name} is already on the roster (player {id}): merge the two players instead"))
            self.store.rename_player(player_id, name)
        return self.get(player_id)

    def merge(self, player_id: int, into) -> Player:
        """``player_id``'s games become ``into``'s; ``player_id`` leaves the roster."""
        if type(into) is not int:
            raise InvalidActionError(N_("'into' must be the id of a player on the roster"))
        if into == player_id:
            raise IllegalActionError(N_("a player cannot be merged into themselves"))
        with self.session.lock:
            ids = {r.id for r in self.store.roster()}
            for pid in (player_id, into):
                if pid not in ids:
                    raise NoSuchPlayer(pid)
            self.store.merge_players(player_id, into)
        return self.get(into)

    def seed(self, names) -> int:
        """Add the settings' ``names`` to an empty roster (only then);
        returns how many were added.  A name the roster would refuse is
        skipped, as is a second spelling of one already added."""
        with self.session.lock:
            if self.store.roster():
                return 0
            added: set[str] = set()
            for raw in names or ():
                try:
                    name = clean_name(raw)
                except InvalidActionError:
                    continue
                if player_key(name) in added or len(added) >= MAX_PLAYERS:
                    continue
                self.store.add_player(name, SEEDED)
                added.add(player_key(name))
            return len(added)

    @staticmethod
    def _refuse_taken(records, name: str, template: str) -> None:
        key = player_key(name)
        for r in records:
            if player_key(r.name) == key:
                raise IllegalActionError(template, name=r.name, id=r.id)
        seen = looks(name)
        for r in records:
            if looks(r.name) == seen:
                raise IllegalActionError(N_("'{name}' looks like {other}, already on the roster (player {id}): "
                                            "choose a name the table can tell apart"),
                                         name=name, other=r.name, id=r.id)
