"""Statistics per player of the table's roster across the stored games.

Pure: :func:`player_stats` takes :class:`Result` values (one per stored game)
and returns plain JSON-ready dicts; reading the store and replaying logs is
the caller's job (:func:`result_of` turns a record and its final public
state into a Result; :func:`results_of_store` does it for a whole store).

What counts (the spec left these open; docs/api.md says the same):

* A player is a **roster player** (companion/roster.py): each seat of a
  stored game belongs to one, whatever name the game's log holds, so a
  renamed player keeps their statistics under the new name and two merged
  players count as one.  The name shown is the roster's.  A seat without a
  roster player (a Result made without ``player_ids``) counts by its
  **name**, compared after Unicode NFC normalisation and case folding
  ("Chloé" typed with a combining accent, or "chloé", is still Chloé), the
  spelling of that player's most recent game shown.
* A player in two seats of one game (two spellings merged) played it once,
  and won it if either seat won.
* **played** counts finished games only (an unfinished game has no result
  yet; it is counted apart as ``unfinished``).
* A **win** is the player's seat being in the finished game's ``winner``; a
  shared win (a tie) is a win for each seat in it.  For Costly Tricks the
  "seats" of ``players``/``winner`` are the two players, as in the log.
* The **score** of a finished game is the match's own measure: the final
  ``tokens`` for The Third Man and Costly Tricks (their ``scores`` hold only
  the last round or hand), the final ``scores`` for every other game.
* The **longest winning streak** is the longest run of consecutive wins in
  the chronological order (by the time of the game's last action) of the
  finished games that player played; overall, and per game type.
* A free scoreboard game the table **named** at its start ("Carcassonne")
  counts under that name, not as "Scoreboard": its key in ``games`` is
  ``scoreboard:<name>`` (the name compared as player names are, so
  "carcassonne" is the same game), and :func:`game_titles` gives the
  spelling of its most recent game.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

# Games decided by tokens, whose ``scores`` are only the last round's or hand's.
TOKEN_SCORED = frozenset({"third-man", "costly-tricks"})


@dataclass(frozen=True)
class Result:
    """One stored game as statistics see it."""

    id: int
    game: str
    players: tuple[str, ...]
    finished: bool
    winner: tuple[int, ...]          # seats; empty while unfinished
    scores: tuple[int, ...] | None   # the match score per seat (finished games), else None
    ended: float                     # time of the last action: the chronological order
    player_ids: tuple = ()           # the roster player of each seat (None: unknown), or ()
    name: str | None = None          # the name a table gave a scoreboard game at its start

    @property
    def key(self) -> str:
        """The game it counts under: its id, or ``scoreboard:<name>`` for a named one."""
        return f"{self.game}:{player_key(self.name)}" if self.name else self.game


def player_key(name: str) -> str:
    """The identity of a player name: NFC, case folded, trimmed."""
    return unicodedata.normalize("NFC", name).strip().casefold()


def match_scores(state: dict | None) -> tuple[int, ...] | None:
    """The score per seat by which a finished game is remembered."""
    if not state or not state.get("game"):
        return None
    key = "tokens" if state["game"] in TOKEN_SCORED and state.get("tokens") is not None else "scores"
    values = state.get(key)
    if not isinstance(values, list):
        return None
    return tuple(values)


def result_of(record, final_state: dict | None, player_ids=(), name: str | None = None) -> Result:
    """A Result from a store record (``GameRecord`` or its ``as_dict()``),
    the public state its log folds to (None if unknown), the roster
    player of each seat (``Store.seat_players``) and the name the table gave
    the game (``companion.history.game_name``)."""
    get = record.get if isinstance(record, dict) else lambda key: getattr(record, key)
    finished = bool(get("finished"))
    return Result(
        id=get("id"), game=get("game"), players=tuple(get("players")),
        finished=finished,
        winner=tuple(get("winner") or ()) if finished else (),
        scores=match_scores(final_state) if finished else None,
        ended=float(get("updated")),
        player_ids=tuple(player_ids or ()),
        name=name or None,
    )


def results_of_store(store) -> list[Result]:
    """Every stored game as a Result, replaying the finished ones for their
    final scores.  For a store nobody else is using (the command line, tests);
    the web reads under the session lock and caches the final states."""
    from .history import first_names
    from .timeline import ReplayError, replay

    out = []
    seats = store.seat_players()
    records = store.games()
    names = first_names(store, records)
    for record in records:
        state = None
        if record.finished:
            try:
                state = replay(store.lines(record.id)).public()
            except ReplayError:
                state = None        # a damaged log: counted, without a score
        out.append(result_of(record, state, seats.get(record.id, ()), names.get(record.id)))
    return out


def game_titles(results) -> dict[str, str]:
    """{key: name} of the named games (:attr:`Result.key`), each spelled as
    its most recent game spells it."""
    out: dict[str, str] = {}
    for result in sorted(results, key=lambda r: (r.ended, r.id)):
        if result.name:
            out[result.key] = result.name
    return out


def longest_streak(wins) -> int:
    """The longest run of True in ``wins``."""
    best = run = 0
    for won in wins:
        run = run + 1 if won else 0
        best = max(best, run)
    return best


def _seats_by_player(result: Result, names: dict) -> dict:
    """{player identity: (name, [seats])} of one game: a roster id where the
    seat has one, else the name's identity."""
    out: dict = {}
    for seat, name in enumerate(result.players):
        pid = result.player_ids[seat] if seat < len(result.player_ids) else None
        key = ("id", pid) if pid is not None else ("name", player_key(name))
        shown = names.get(pid, name) if pid is not None else name
        out.setdefault(key, (shown, pid, []))[2].append(seat)
    return out


def player_stats(results, names: dict | None = None) -> list[dict]:
    """Per roster player (``names``: roster id -> name shown)::

        {"id", "name", "played", "won", "unfinished", "streak",
         "games": {game_id: {"played", "won", "average", "best", "streak"}}}

    (``id`` is None for a player known by name only), sorted by wins, then
    games played (both descending), then name."""
    names = names or {}
    ordered = sorted(results, key=lambda r: (r.ended, r.id))
    players: dict = {}
    history: dict = {}                                   # key -> [(game, won)] in order
    for result in ordered:
        for key, (name, pid, seats) in _seats_by_player(result, names).items():
            entry = players.setdefault(key, {"id": pid, "name": name, "played": 0, "won": 0, "unfinished": 0,
                                             "streak": 0, "games": {}})
            entry["name"] = name               # the roster's name, or the latest spelling
            if not result.finished:
                entry["unfinished"] += 1
                continue
            won = any(seat in result.winner for seat in seats)
            seat = next((s for s in seats if s in result.winner), seats[0])
            entry["played"] += 1
            entry["won"] += int(won)
            per = entry["games"].setdefault(result.key, {"played": 0, "won": 0, "average": None,
                                                          "best": None, "streak": 0, "_total": 0,
                                                          "_scored": 0})
            per["played"] += 1
            per["won"] += int(won)
            if result.scores is not None and seat < len(result.scores):
                score = result.scores[seat]
                per["_total"] += score
                per["_scored"] += 1
                per["best"] = score if per["best"] is None else max(per["best"], score)
            history.setdefault(key, []).append((result.key, won))
    for key, entry in players.items():
        runs = history.get(key, [])
        entry["streak"] = longest_streak(won for _, won in runs)
        for game, per in entry["games"].items():
            per["streak"] = longest_streak(won for g, won in runs if g == game)
            scored = per.pop("_scored")
            total = per.pop("_total")
            per["average"] = round(total / scored, 2) if scored else None
        entry["games"] = dict(sorted(entry["games"].items()))
    return sorted(players.values(), key=lambda e: (-e["won"], -e["played"], player_key(e["name"]), e["name"]))
