"""The table's finished games as *plays* for the apps players log them in.

BG Stats (and, through it, BoardGameGeek) takes a play pushed from another
app as a JSON object, either on its own ``createPlay`` link (which opens the
app's import dialog with the play filled in) or, here, one object per line of
a file.  A spreadsheet takes the same plays as CSV, one row per player.

Everything here is pure: the caller reads the store (under the session's
lock) into :class:`PlayFacts` and this module maps them.  Only public facts
go in: a finished game's record (players, winners, times), its public final
scores (the store's summary, or a public replay) and the state right after
its ``new_game`` line (who starts).  No secret entry is read, so a play shows
nothing beyond what the game's public log shows.

Field by field (docs/api.md, "Plays for BG Stats and spreadsheets"):

* ``sourceName`` "companion"; ``sourcePlayId`` the table's game number and
  its start time, so that two boxes' game 12 stay two plays;
* ``playDate`` the game's start (its first line), in UTC, ``yyyy-MM-dd HH:mm:ss``;
* ``durationMin`` from the first line to the last change, in whole minutes;
  left out when that is under a minute (an imported log: its lines have no
  times of their own, they all carry the moment of the import);
* ``location`` the table's name (setting ``name``, the name it has on the network);
* ``game``: ``name`` the English title (the same whatever the phone's
  language, so BG Stats matches it once), or the name the table gave a free
  scoreboard game; ``sourceGameId`` the game's id (a named scoreboard game:
  its BoardGameGeek number or its name); ``bggId`` only where a
  BoardGameGeek id is known (:data:`BGG_IDS`, or the free scoreboard's own);
  ``highestWins`` true (every game here is won on the highest score, FIGHT?'s
  last player holding coins holds them all); ``noPoints`` false;
* per player: ``name`` as the table names them now (the roster), and
  ``sourcePlayerId`` the roster player's number (it follows a rename or a
  merge, so BG Stats keeps its match), else the name's identity; ``score``
  the match's own measure (tokens for The Third Man and Costly Tricks, the
  totals elsewhere: :func:`companion.stats.match_scores`); ``winner`` for
  every seat in the game's winners (a shared win gives several); ``rank``
  1 for the winners, then by score (FIGHT?: by the order players went out);
  ``startPlayer`` for the seat the game names first to play, when it names one.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from urllib.parse import quote

from .i18n import N_, gettext
from .stats import match_scores, player_key

SOURCE_NAME = "companion"
CREATE_PLAY = "https://app.bgstatsapp.com/createPlay.html"

# A link is refused above this many characters, not cut: a longer address
# is not passed on whole by every phone browser and link handler.  A game of
# eight 24-character names gives about 2,500.
MAX_LINK = 8000

# BoardGameGeek ids of the games the table keeps.  None was found in a
# source for these games (docs/api.md says so): a play then carries no
# ``bggId`` and the player links the game once in BG Stats, which remembers
# it by ``sourceGameId``.  Never fill one in without a source.
BGG_IDS: dict[str, int] = {}

# English titles (the games' own ``title`` strings): the play's game name,
# whatever the phone's language.
TITLES = {
    "third-man": "The Third Man",
    "costly-tricks": "Costly Tricks",
    "fight": "FIGHT?",
    "sloppy-seconds": "Sloppy Seconds",
    "yenta": "Yenta",
    "diabolo": "Diabolo",
    "scoreboard": "Scoreboard",
}

# Games ranked by the order players went out (the last one left wins).
RANKED_BY_OUT = frozenset({"fight"})


@dataclass(frozen=True)
class PlayFacts:
    """What a play is made of, read from the store by the caller."""

    id: int                          # the table's game number
    game: str                        # the game's id
    players: tuple[str, ...]         # names per seat (the roster's, where it has one)
    player_ids: tuple = ()           # roster player per seat (None: none), or ()
    winner: tuple[int, ...] = ()     # winning seats
    final: dict = field(default_factory=dict)    # public final state (at least scores/tokens)
    first: dict = field(default_factory=dict)    # public state right after new_game
    started: float = 0.0             # time of the first line (epoch seconds)
    ended: float = 0.0               # time of the last change
    table: str = ""                  # the table's name


class TooLong(ValueError):
    """A play whose link would be longer than :data:`MAX_LINK`."""

    def __init__(self, length: int):
        super().__init__(f"the link would be {length} characters long")
        self.length = length


def utc_text(ts: float) -> str:
    """``yyyy-MM-dd HH:mm:ss`` in UTC, as BG Stats reads ``playDate``."""
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def game_name(facts: PlayFacts) -> tuple[str, str, int | None]:
    """The play's game: its name, ``sourceGameId`` and BoardGameGeek id.
    A free scoreboard game the table named at its start (options ``name``
    and ``bgg_id``) is that game, by its BoardGameGeek number or else by its
    name's identity (so each named game is matched once in BG Stats, apart
    from the others); every other game is its English title, by its id."""
    options = facts.first.get("options") if isinstance(facts.first.get("options"), dict) else {}
    named = options.get("name") if facts.game == "scoreboard" else None
    if isinstance(named, str) and named.strip():
        bgg = options.get("bgg_id")
        bgg = bgg if isinstance(bgg, int) and not isinstance(bgg, bool) and bgg > 0 else None
        source = f"scoreboard-bgg-{bgg}" if bgg is not None else "scoreboard-" + player_key(named)
        return named.strip(), source, bgg
    return TITLES.get(facts.game, facts.game), facts.game, BGG_IDS.get(facts.game)


def start_seat(facts: PlayFacts) -> int | None:
    """The seat the game names to play first, from the state after
    ``new_game`` (its ``lead`` or ``turn``), if it names one.  Costly
    Tricks' players are sides and its lead a seat: no start player."""
    if facts.game == "costly-tricks":
        return None
    for key in ("lead", "turn"):
        seat = facts.first.get(key)
        if isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < len(facts.players):
            return seat
    return None


def ranks(facts: PlayFacts, scores) -> list[int]:
    """1 for every winner; the others after them, by score (equal scores
    share a rank) or, in FIGHT?, by the order they went out (last out first)."""
    n = len(facts.players)
    winners = set(facts.winner)
    out = facts.final.get("out") if facts.game in RANKED_BY_OUT else None
    result = []
    for seat in range(n):
        if seat in winners:
            result.append(1)
        elif isinstance(out, list) and seat in out:
            result.append(1 + len(winners) + (len(out) - 1 - out.index(seat)))
        else:
            mine = scores[seat] if scores and seat < len(scores) else None
            above = sum(1 for s in range(n) if s not in winners and scores and s < len(scores)
                        and mine is not None and scores[s] > mine)
            result.append(1 + len(winners) + above)
    return result


def source_player_id(facts: PlayFacts, seat: int) -> str:
    pid = facts.player_ids[seat] if seat < len(facts.player_ids) else None
    return f"player-{pid}" if pid is not None else "name-" + player_key(facts.players[seat])


def play(facts: PlayFacts) -> dict:
    """The BG Stats push payload of a finished game."""
    scores = match_scores({"game": facts.game, **facts.final})
    name, source, bgg = game_name(facts)
    first = start_seat(facts)
    board = {"name": name, "sourceGameId": source}
    if bgg is not None:
        board["bggId"] = bgg
    board.update(highestWins=True, noPoints=False)
    places = ranks(facts, scores)
    players = []
    for seat, player in enumerate(facts.players):
        entry = {"name": player, "sourcePlayerId": source_player_id(facts, seat)}
        if scores is not None and seat < len(scores) and isinstance(scores[seat], int):
            entry["score"] = scores[seat]
        # Every player carries ``winner``, false too: BG Stats' Android app
        # refuses a pushed player without it.
        entry["winner"] = seat in facts.winner
        entry["rank"] = places[seat]
        if first is not None:
            entry["startPlayer"] = seat == first
        players.append(entry)
    out = {
        "sourceName": SOURCE_NAME,
        "sourcePlayId": f"{facts.id}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime(facts.started))}",
        "playDate": utc_text(facts.started),
    }
    minutes = int(max(0.0, facts.ended - facts.started) // 60)
    if minutes >= 1:
        out["durationMin"] = minutes
    if facts.table.strip():
        out["location"] = facts.table.strip()
    out["game"] = board
    out["players"] = players
    return out


def encoded(payload: dict) -> str:
    """The payload as one line of compact JSON (UTF-8 names as themselves)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def link(payload: dict, limit: int | None = None) -> str:
    """BG Stats' ``createPlay`` link carrying ``payload``; raises
    :class:`TooLong` (over ``limit``, else :data:`MAX_LINK`) rather than cut a play."""
    url = f"{CREATE_PLAY}?data={quote(encoded(payload), safe='')}"
    if len(url) > (MAX_LINK if limit is None else limit):
        raise TooLong(len(url))
    return url


# -- files --------------------------------------------------------------------------

def local_day(ts: float) -> date:
    """The day a game was played, by the box's clock (what ``--from``/``--to`` compare)."""
    return date.fromtimestamp(ts)


def within(facts: PlayFacts, first: date | None, last: date | None) -> bool:
    day = local_day(facts.started)
    return (first is None or day >= first) and (last is None or day <= last)


def jsonl(payloads) -> str:
    """One payload per line, the same JSON as the link carries."""
    return "".join(encoded(p) + "\n" for p in payloads)


CSV_COLUMNS = [N_("play"), N_("game"), N_("date (UTC)"), N_("minutes"), N_("location"), N_("seat"),
               N_("player"), N_("score"), N_("winner"), N_("rank"), N_("start player")]

# Cells a spreadsheet would run as a formula: a player named "=1+1" stays a name.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value):
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_rows(payload: dict, number: int) -> list[list]:
    """One row per player of a play (``number``: the table's game number)."""
    rows = []
    for seat, player in enumerate(payload["players"], start=1):
        start = player.get("startPlayer")
        rows.append([number, payload["game"]["name"], payload["playDate"], payload.get("durationMin", ""),
                     payload.get("location", ""), seat, player["name"], player.get("score", ""),
                     int(player["winner"]), player.get("rank", ""), "" if start is None else int(start)])
    return rows


def csv_text(plays, language: str | None = None) -> str:
    """``plays``: ``(game number, payload)`` pairs.  UTF-8 text starting with
    a byte-order mark, so that spreadsheets keep the names' accents."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\r\n")
    out.writerow([gettext(column, language) for column in CSV_COLUMNS])
    for number, payload in plays:
        for row in csv_rows(payload, number):
            out.writerow([_cell(value) for value in row])
    return "\ufeff" + buf.getvalue()


# -- from the store -----------------------------------------------------------------

def facts_of(record, first_line: str | None, seat_ids=(), names=None, table: str = "") -> PlayFacts | None:
    """The facts of a stored finished game from its record (with its
    summary), its first line and the roster (``seat_ids``: the roster player
    of each seat, ``names``: roster id -> name).  None for a game that is not
    finished or whose first line does not read."""
    from .errors import ActionError
    from .timeline import Timeline, parse_line

    if not record.finished or first_line is None:
        return None
    try:
        timeline = Timeline()
        action = parse_line(first_line)
        timeline.apply(action)
        first = dict(timeline.public())
    except ActionError:
        return None
    first["options"] = action.get("options") if isinstance(action.get("options"), dict) else {}
    names = names or {}
    seat_ids = tuple(seat_ids or ())
    shown = tuple(names.get(seat_ids[seat], player) if seat < len(seat_ids) and seat_ids[seat] is not None
                  else player for seat, player in enumerate(record.players))
    return PlayFacts(id=record.id, game=record.game, players=shown, player_ids=seat_ids,
                     winner=tuple(record.winner or ()), final=dict(record.summary or {}), first=first,
                     started=float(record.started), ended=float(record.updated), table=table)


def store_rows(store, ids=None) -> tuple:
    """What the plays of ``store``'s finished games (``ids``: of those only)
    are made of, read in one go: the caller holds the store's lock for this
    only, and maps it with :func:`facts_from_rows` afterwards."""
    if ids is None:
        records = [r for r in store.games() if r.finished]
        unknown = [r.id for r in records if r.summary is None]
        if unknown:             # a store written before summaries: filled once, as a listing does
            store.page(ids=unknown, count=len(unknown))
            records = [store.game(r.id) if r.id in unknown else r for r in records]
    else:                       # a page of the listing's kind fills a missing summary itself
        ids = list(ids)
        records = [r for r in store.page(0, len(ids), ids=ids)[0] if r.finished]
    wanted = [r.id for r in records]
    return (records, store.first_lines(wanted), store.seat_players(ids=wanted) if wanted else {},
            store.roster_names())


def facts_from_rows(rows, table: str = "") -> list[PlayFacts]:
    """The facts of :func:`store_rows`' games, oldest first."""
    records, firsts, seats, names = rows
    out = []
    for record in sorted(records, key=lambda r: (r.started, r.id)):
        facts = facts_of(record, firsts.get(record.id), seats.get(record.id, ()), names, table)
        if facts is not None:
            out.append(facts)
    return out


def store_facts(store, table: str = "", ids=None) -> list[PlayFacts]:
    """The facts of every finished game of ``store``, oldest first (for a
    store nobody else is using: the command line, tests)."""
    return facts_from_rows(store_rows(store, ids), table)
