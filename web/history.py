"""The table's memory on the phones: past games, step-through, statistics,
export and import (docs/api.md, "History, statistics, export and import").

Everything here reads the store the table session writes.  The store is not
thread-safe by itself, so every read and the import's write run under
``session.lock``; the slow parts (replaying a log, building a CSV) run
outside it, so the table is never held up by someone browsing old games.

Secrecy: every rendering of a log goes through
:func:`companion.history.public_steps`, which hides each secret entry the
table has not seen revealed.  The only way to the unredacted log is
``export.jsonl`` with the table PIN (to move a game in progress to another
box and continue it there), and only while no secret entry is pending: the
PIN is shown on the box to the whole table, so it must not open a bid.
"""

from __future__ import annotations

import json
import threading
import time
from urllib.parse import urlencode
from collections import OrderedDict

from flask import Blueprint, Response, current_app, jsonify, render_template, request
from flask import g as per_request
from werkzeug.exceptions import RequestEntityTooLarge

from companion import games as game_registry
from companion.errors import ActionError
from companion.exports import csv_text, decoded_lines, export_lines, steps_of, store_timeline, validate
from companion.history import first_names, game_name
from companion.i18n import N_, gettext, translate_error
from companion.limits import (HISTORY_PAGE_GAMES, HISTORY_PAGE_STEPS, IMPORT_BURST, IMPORT_REFILL_S,
                              MAX_IMPORT_BYTES, MAX_IMPORT_LINES, Bucket)
from companion.store import StoreFull
from companion.names import invisible, refuse_lookalikes
from companion.text import unsafe_char
from companion.stats import TOKEN_SCORED, game_titles, player_key, player_stats, result_of
from companion.timeline import ReplayError, replay

from .api import refuse_unsafe_text
from .app import companion
from .errors import ApiError, error_response, request_language
from .guards import pin_required, pin_shown

bp = Blueprint("history", __name__)

PAGE_BYTES = 256 * 1024    # a page of steps ends before this many bytes (at least one step)
STEPS_KEPT = 3             # games whose public steps are kept encoded (the current one, two browsed)

# One replay of a whole stored game at a time (a rendering, a final state):
# they are the heavy work a client without a credential can ask for.
RENDERING = threading.Lock()


# -- reading the store ---------------------------------------------------------
#
# A listing reads each game's row and summary (companion/store.py: lines,
# bytes, the scores and tokens its log folds to, kept when the game changes):
# it never replays a log, and one page of HISTORY_PAGE_GAMES costs the same
# at 10,000 stored games as at 10 (bench_history).  Only the step-through of
# one game replays it (Rendered, below).

class Rendered:
    """One stored game as the public sees it, worked out once per version:
    its public steps (each JSON-encoded, for paging) and final state; its
    CSV and redacted export when first asked for (:meth:`kept`).  Only
    encoded forms are kept: a few MB for the largest game (companion/limits.py)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        steps, self.broken_at = steps_of(lines)
        self.state = steps[-1]["state"] if steps else None
        self.steps = [_encode(step) for step in steps]
        self._kept: dict = {}

    def page(self, start: int) -> tuple[list[str], int]:
        """The steps from index ``start``, encoded: at most HISTORY_PAGE_STEPS of
        them and about PAGE_BYTES; returns them and the index of the next page's first."""
        end, size = start, 0
        while end < len(self.steps) and end - start < HISTORY_PAGE_STEPS:
            size += len(self.steps[end])
            if size > PAGE_BYTES and end > start:
                break
            end += 1
        return self.steps[start:end], end

    def kept(self, name: str, work):
        """``work()`` once for this version of the game (one at a time, as
        every rendering); an ActionError it raises is kept and raised again."""
        if name not in self._kept:
            with RENDERING:
                if name not in self._kept:
                    try:
                        self._kept[name] = work()
                    except ActionError as exc:      # a log damaged by hand: refused as it always was
                        self._kept[name] = exc
        found = self._kept[name]
        if isinstance(found, ActionError):
            raise found
        return found

    def csv(self, language: str) -> str:
        return self.kept(f"csv.{language}", lambda: csv_text([json.loads(s) for s in self.steps], language))

    def public_export(self) -> str:
        return self.kept("jsonl", lambda: "".join(line + "\n" for line in export_lines(self.lines, full=False)))


class RenderedGames:
    """The last few :class:`Rendered` games, by (id, actions, updated): a
    stored game only changes by growing, so its key changes with it.

    Renderings run one at a time (:data:`RENDERING`): phones asking for the
    same game wait for one rendering, and clients cycling through more games
    than are kept cost one busy thread, never all of them, so the table's
    own requests keep their share of the processor."""

    def __init__(self, keep: int = STEPS_KEPT):
        self.keep = keep
        self._lock = threading.Lock()
        self._games: OrderedDict[tuple, Rendered] = OrderedDict()

    def get(self, session, game_id: int):
        """``(record, rendered, current)`` of a stored game (404 if none)."""
        with session.lock:
            record = session.store.game(game_id)
            current = session.game_id == game_id
        if record is None:
            raise ApiError(404, N_("there is no stored game {id} (see /api/history)"), id=game_id)
        key = (record.id, record.actions, record.updated)
        found = self._kept(key)
        if found is None:
            with RENDERING:
                found = self._kept(key)          # rendered while this one waited
                if found is None:
                    with session.lock:
                        record = session.store.game(game_id)     # the lines and their record: one version
                        lines = session.store.lines(game_id)
                    key = (record.id, record.actions, record.updated)
                    found = Rendered(lines)
                    _give_back_memory()
                    with self._lock:
                        self._games[key] = found
                        while len(self._games) > self.keep:
                            self._games.popitem(last=False)
        return record, found, current

    def _kept(self, key):
        with self._lock:
            found = self._games.get(key)
            if found is not None:
                self._games.move_to_end(key)
            return found


def _give_back_memory() -> None:
    """Return the memory a rendering used to the system at once (glibc keeps
    freed blocks in each thread's arena otherwise: the box's resident memory
    would creep up to the sum of every thread's peak)."""
    try:
        _LIBC.malloc_trim(0)
    except (AttributeError, OSError):     # not glibc: nothing to do
        pass


try:
    import ctypes
    import ctypes.util

    _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
except OSError:             # pragma: no cover  (no C library to load)
    _LIBC = None


def _rendered(game_id: int):
    games = current_app.extensions.setdefault("companion.history.rendered", RenderedGames())
    return games.get(companion().session, game_id)


def _listed(game: str = "", player: str = "", start: int = 0) -> tuple[list, int]:
    """One page of stored games, newest first, and how many match; filtered
    by game id and player: the roster player of that name
    (companion/roster.py: their games under any earlier name, or merged
    in), else the name as the logs hold it (compared as
    :func:`companion.stats.player_key` does)."""
    session = companion().session
    with session.lock:
        store = session.store
        players = games = None
        if player:
            wanted = player_key(player)
            players = [pid for pid, name in store.roster_names().items() if player_key(name) == wanted]
            if not players:
                # Not on the roster (an old spelling): the logs' names, the slow way round.
                players = None
                games = [gid for gid, names in store.game_names()
                         if isinstance(names, list) and any(isinstance(n, str) and player_key(n) == wanted
                                                            for n in names)]
        records, total = store.page(start, HISTORY_PAGE_GAMES, game=game or None, players=players, ids=games)
        # The roster's names of this page's seats only: the same cost at 10,000 games as at 10.
        per_request.roster_view = (store.seat_players(ids=[r.id for r in records]), store.roster_names())
        per_request.game_names = first_names(store, records)       # "Carcassonne", not "Scoreboard"
    return records, total


def _roster_view() -> tuple[dict, dict]:
    """(seat players per game, name per roster id), read once per request:
    a list of a thousand games asks the store twice, not twice per game."""
    if "roster_view" not in per_request:
        session = companion().session
        with session.lock:
            per_request.roster_view = (session.store.seat_players(), session.store.roster_names())
    return per_request.roster_view


def _roster_names(record) -> tuple[list[str], list]:
    """The names each seat of a stored game has on the roster now (a seat
    without a roster player keeps its log's name), and the roster ids."""
    seats, names = _roster_view()
    ids = seats.get(record.id, [])
    shown = [names.get(ids[seat], name) if seat < len(ids) else name for seat, name in enumerate(record.players)]
    return shown, [ids[seat] if seat < len(ids) else None for seat in range(len(record.players))]


def _with_roster(out: dict, record) -> dict:
    """A record's dict with the roster's names in ``players`` (the history
    follows a rename) and, beside them, ``player_ids`` and the names the
    log holds (``log_players``)."""
    out["log_players"] = list(record.players)
    out["players"], out["player_ids"] = _roster_names(record)
    return out


def _record(game_id: int):
    session = companion().session
    with session.lock:
        record = session.store.game(game_id)
    if record is None:
        raise ApiError(404, N_("there is no stored game {id} (see /api/history)"), id=game_id)
    return record


def _title(game_id: str, language: str) -> str:
    try:
        return gettext(game_registry.get(game_id).title, language)
    except Exception:          # a game no longer installed: its id will do
        return game_id


def _summary(record, language: str) -> dict:
    """A list entry: the record, its title and the name the table gave it
    (a named scoreboard game, else null), whether it is the table's current
    game, and its final (or current) scores and tokens (from the store's
    summary: no replay)."""
    state = record.summary or {}
    out = _with_roster(record.as_dict(), record)
    out["title"] = _title(record.game, language)
    out["name"] = per_request.get("game_names", {}).get(record.id)
    out["current"] = record.id == companion().session.game_id
    out["scores"] = state.get("scores")
    out["tokens"] = state.get("tokens")
    return out


def _game_ids() -> list[str]:
    return list(game_registry.available())


def _no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    return response


def _filters() -> tuple[str, str]:
    game, player = request.args.get("game", "").strip(), request.args.get("player", "").strip()
    refuse_unsafe_text(player, "player")
    return game, player


# -- the API ------------------------------------------------------------------------

@bp.get("/api/history")
@bp.get("/api/history/games")       # the same list; see docs/api.md (web/pages.py also routes /api/history)
def history_list():
    game, player = _filters()
    language = request_language()
    start = _offset()
    records, total = _listed(game, player, start)
    games = [_summary(r, language) for r in records]
    return _no_store(jsonify(games=games, page=_games_page(start, len(games), total, game, player)))


def _games_page(start: int, count: int, total: int, game: str, player: str) -> dict:
    """Where a page of the list sits (``next``: the next page's address, or null)."""
    following = None
    if start + count < total:
        query = {"from": start + count, **({"game": game} if game else {}), **({"player": player} if player else {})}
        following = "/api/history?" + urlencode(query)
    return {"from": start, "count": count, "total": total, "next": following}


@bp.get("/api/history/<int:game_id>")
def history_game(game_id: int):
    detail = _detail(game_id, request_language(), _start())
    # The steps are kept encoded: spliced in as they are, never decoded and
    # encoded again (the same JSON as jsonify's: compact, keys in order).
    body = "".join(['{"record":', _encode(detail["record"]), ',"state":', _encode(detail["state"]),
                    ',"steps":[', ",".join(detail["steps"]), '],"broken_at":', _encode(detail["broken_at"]),
                    ',"page":', _encode(detail["page"]), "}"])
    return _no_store(Response(body, mimetype="application/json"))


def _encode(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _start() -> int:
    """``?from=K``: the index of the first step wanted (0 by default)."""
    text = request.args.get("from", "0").strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise ApiError(400, N_("'from' must be a step number (0 for the first), got '{value}'"), value=text[:24])
    return int(text)


def _offset() -> int:
    """``?from=K`` of a list: the place of the first game wanted (0: the newest)."""
    text = request.args.get("from", "0").strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise ApiError(400, N_("'from' must be a game's place in the list (0 for the newest), got '{value}'"),
                       value=text[:24])
    return int(text)


def _detail(game_id: int, language: str, start: int = 0) -> dict:
    """A stored game's record, final state and one page of its public steps,
    encoded (docs/api.md: the first page has the shape a whole game had
    before paging; ``page.next`` is the address of the next one, or null)."""
    record, rendered, current = _rendered(game_id)
    total = len(rendered.steps)
    if start and start >= total:
        raise ApiError(404, N_("game {id} has {n} steps: there is no step {k}"), id=game_id, n=total, k=start)
    steps, end = rendered.page(start)
    out = _with_roster(record.as_dict(), record)
    out["title"] = _title(record.game, language)
    out["name"] = _name_of(record)
    out["current"] = current
    following = f"/api/history/{game_id}?from={end}" if end < total else None
    return {"record": out, "state": rendered.state, "steps": steps, "broken_at": rendered.broken_at,
            "page": {"from": start, "count": len(steps), "total": total, "next": following}}


def _name_of(record) -> str | None:
    """The name the table gave a stored game at its start (a scoreboard game's), or None."""
    session = companion().session
    with session.lock:
        return first_names(session.store, [record]).get(record.id)


def _pending_secret(lines) -> bool:
    """Whether the log ends with a secret entry the table has not seen yet."""
    try:
        timeline = replay(lines)
    except ReplayError:
        return True          # a damaged log: play safe, no full export
    return bool(timeline.started and timeline.state.hidden)


def _download(body: str, mimetype: str, filename: str, redacted: bool | None = None) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    if redacted is not None:
        response.headers["X-Companion-Redacted"] = "1" if redacted else "0"
    return _no_store(response)


@bp.get("/api/history/<int:game_id>/export.jsonl")
def export_jsonl(game_id: int):
    # The unredacted log only with the right PIN (a wrong one is refused and
    # counted, as everywhere); without one, the public log.
    full = pin_shown()
    if not full:
        record, rendered, _current = _rendered(game_id)
        return _download(rendered.public_export(), "application/x-ndjson",
                         f"game-{game_id:06d}-{record.game}.jsonl", redacted=True)
    record = _record(game_id)
    session = companion().session
    with session.lock:
        lines = session.store.lines(game_id)
    if _pending_secret(lines):
        # The PIN is on the box for the whole table to read: it must not
        # become a way round the pass-the-box secrecy of a bid under way.
        raise ApiError(409, N_("a secret entry is pending in this game: the full log can be "
                               "downloaded once it is revealed (or download the public log without the PIN)"))
    out = export_lines(lines, full=full)
    body = "".join(line + "\n" for line in out)
    return _download(body, "application/x-ndjson", f"game-{game_id:06d}-{record.game}.jsonl",
                     redacted=not full)


@bp.get("/api/history/<int:game_id>/export.csv")
def export_csv(game_id: int):
    record, rendered, _current = _rendered(game_id)
    # A byte-order mark so that spreadsheets read the names' accents as UTF-8.
    body = "\ufeff" + rendered.csv(request_language())
    return _download(body, "text/csv", f"game-{game_id:06d}-{record.game}.csv")


@bp.post("/api/history/import")
@pin_required(N_("importing a game needs the table PIN (header X-Table-Pin)"))
def import_game():
    c = companion()
    wait = _imports().take()
    if wait:
        # Table-wide, whoever sends them: the PIN is public at the table, and
        # each import is a replay and a stored game (docs/security.md).
        raise ApiError(429, N_("too many imports at this table: wait {seconds} s"),
                       headers={"Retry-After": str(wait)}, seconds=wait)
    request.max_content_length = MAX_IMPORT_BYTES       # a log is bigger than one action
    try:
        data = request.get_data(cache=False)
    except RequestEntityTooLarge:
        raise ApiError(413, N_("the log is too large (at most {limit} bytes)"), limit=MAX_IMPORT_BYTES) from None
    lines = decoded_lines(data)
    actions = sum(1 for line in lines if line.strip())
    if actions > MAX_IMPORT_LINES:
        raise ApiError(413, N_("the file holds {n} steps: the box keeps games of at most {limit} steps"),
                       n=actions, limit=MAX_IMPORT_LINES)
    try:
        timeline = validate(lines)     # outside the lock: the table goes on meanwhile
    except ReplayError as exc:
        # The replay contract: "line N: " stays as it is in every language.
        return error_response(400, f"line {exc.line}: {translate_error(exc.error, request_language())}")
    refusal = _unsafe_names(lines, timeline.players)
    if refusal:
        return error_response(400, refusal)
    with c.session.lock:
        try:
            # The names a table can tell apart (companion/names.py), against the roster too.
            refuse_lookalikes(list(timeline.players), list(c.session.store.roster_names().values()))
        except ActionError as exc:
            return error_response(400, f"line {_first_line(lines)}: {translate_error(exc, request_language())}")
        current = c.session.game_id
        try:
            game_id = store_timeline(c.session.store, timeline, keep=(current,) if current is not None else ())
        except StoreFull as exc:        # the operator chose "refuse", or only unfinished games are left
            raise ApiError(409, exc.template, **exc.params) from None
    public = timeline.public()
    return _no_store(jsonify(id=game_id, game=public["game"], finished=bool(public.get("finished")),
                             state=public))


def _imports() -> Bucket:
    """The table's import bucket (settings ``import_burst``, ``import_refill_s``)."""
    found = current_app.extensions.get("companion.history.imports")
    if found is None:
        config = companion().config
        found = current_app.extensions.setdefault("companion.history.imports", Bucket(
            int(config.get("import_burst", IMPORT_BURST)), float(config.get("import_refill_s", IMPORT_REFILL_S))))
    return found


def _unsafe_names(lines, players) -> str | None:
    """The web takes no name with a control or direction character
    (companion/text.py); an imported log's names are no exception.
    (``companion replay`` and ``companion import`` still accept them: the
    log contract is older than this rule.)"""
    for name in players:
        found = unsafe_char(name)
        if found:
            message = gettext(N_("'{where}' holds the character {char}: names and labels must not "
                                 "hold control or text-direction characters"), request_language(),
                              where="players", char=found)
            return f"line {_first_line(lines)}: {message}"
        hidden = next((ch for ch in name if invisible(ch)), None)
        if hidden is not None:
            # A log is stored as it is: not tidied like a typed name, refused.
            message = gettext(N_("the player name '{name}' holds the invisible character {char}: "
                                 "names must be told apart by their look"), request_language(),
                              name=name, char=f"U+{ord(hidden):04X}")
            return f"line {_first_line(lines)}: {message}"
    return None


def _first_line(lines) -> int:
    """The number of the log's first line (its new_game), blank lines counted."""
    return next(n for n, text in enumerate(lines, start=1) if text.strip())


@bp.post("/api/history/<int:game_id>/resume")
@pin_required(N_("resuming a game needs the table PIN (header X-Table-Pin)"))
def resume(game_id: int):
    c = companion()
    record = _record(game_id)
    if record.finished:
        raise ApiError(409, N_("game {id} is finished: only an unfinished game can be resumed"), id=game_id)
    # TableSession.resume(game_id) -> public state is the session's to provide
    # (it swaps the current game under its lock and tells everyone).  Until it
    # exists, say so plainly.
    method = getattr(c.session, "resume", None)
    if not callable(method):
        raise ApiError(501, N_("resuming a game from the phone is not available yet"))
    state = method(game_id)
    return _no_store(jsonify(state))


@bp.get("/api/stats")
def stats():
    language = request_language()
    players, named = _player_stats()
    return _no_store(jsonify(players=players, titles=_stats_titles(players, named, language)))


def _stats_titles(players, named: dict, language: str) -> dict:
    """{key: title} of every game the statistics show: a game's title, or
    the name a table gave its scoreboard game ("Carcassonne")."""
    return {g: named.get(g) or _title(g, language) for g in sorted({g for p in players for g in p["games"]})}


def _player_stats() -> tuple[list[dict], dict]:
    """Per roster player: a rename or a merge shows at once.  Every stored
    game counts, so this is worked out once per change of the store (by its
    generation) and one at a time: a client asking again and again costs
    nothing until the table changes something."""
    session = companion().session
    cache = current_app.extensions.setdefault("companion.history.stats", {})
    with session.lock:
        generation = session.store.generation
    if cache.get("generation") == generation:
        return cache["players"], cache["named"]
    with RENDERING:
        if cache.get("generation") == generation:
            return cache["players"], cache["named"]
        with session.lock:
            generation = session.store.generation
            records = session.store.games()
            seats, names = session.store.seat_players(), session.store.roster_names()
            game_names = first_names(session.store, records)
        results = [result_of(r, {"game": r.game, **r.summary} if r.finished and r.summary else None,
                             seats.get(r.id, ()), game_names.get(r.id))
                   for r in records]
        players = player_stats(results, names)
        named = game_titles(results)
        cache.clear()
        cache.update(generation=generation, players=players, named=named)
    return players, named


# -- the pages ------------------------------------------------------------------------

# Every text history.js and stats.js build, in English (the catalogue's msgid);
# the page carries {english: translated} in its boot data, as web/pages.py does.
# (tests/web/test_history_web.py checks that every t("...") of both scripts is here.)
JS_TEXTS = [
    N_("Step {k} of {n}"), N_("New game: {players}"), N_("Undo"),
    N_("hidden"), N_("{name}: {action}"), N_("Wins"), N_("Average score"),
    N_("Enter the table PIN first."), N_("Choose the game's file first."), N_("No file chosen yet."),
    N_("Step {n} of the file is refused: {reason}"),
    N_("Imported as game {id}."), N_("Open it"), N_("Resumed: it is the game at the table now."),
    N_("Resume this game?"), N_("Resume it"), N_("Cancel"),
    N_("Sending…"), N_("The box does not answer: try again."), N_("Downloaded."),
    N_("Clock: {times} · {name} to play"), N_("Clock: {times} · stopped"),
    N_("More columns: scroll sideways →"),
]


def _boot(page: str, language: str, **extra) -> dict:
    """The data the page's scripts read (``#boot``, see web/static/common.js):
    texts in the page's language (ours and the shared scripts'), game titles."""
    try:
        from .pages import JS_TEXTS as shared_texts
    except ImportError:           # the phone pages are not there: our texts will do
        shared_texts = []
    texts = {text: gettext(text, language) for text in [*shared_texts, *JS_TEXTS]}
    titles = {g: _title(g, language) for g in _game_ids()}
    from companion.colours import names_to_ids       # Diabolo's usual colours in the phone's language
    return {"page": page, "lang": language, "texts": texts, "titles": titles, "colours": names_to_ids(), **extra}


def _when(ts: float) -> str:
    """A time as the box's clock says it; the page's script redraws it in the phone's."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts))


def _page(template: str, page: str, boot: dict | None = None, **context):
    language = request_language()

    def translate(message, **params):
        return gettext(message, language, **params)

    html = render_template(template, lang=language, _=translate, page=page, when=_when, iso=_iso,
                           boot=_boot(page, language, **(boot or {})), **context)
    response = Response(html, mimetype="text/html")
    response.headers["Content-Language"] = language
    response.headers["Vary"] = "Accept-Language"
    return _no_store(response)


@bp.get("/history")
def history_page():
    game, player = _filters()
    language = request_language()
    session = companion().session
    with session.lock:
        names = sorted(session.store.roster_names(played=True).values(), key=player_key)
    start = _offset()
    records, total = _listed(game, player, start)
    games = [_summary(r, language) for r in records]
    page = _games_page(start, len(games), total, game, player)
    if page["next"]:
        page["next"] = "/history?" + page["next"].partition("?")[2]
    from .plays import links          # "Add to BG Stats" on each finished game, in the HTML
    return _page("history.html", "history", games=games, game=game, player=player, names=names,
                 token_scored=TOKEN_SCORED,
                 game_ids=[(g, _title(g, language)) for g in _game_ids()], games_page=page,
                 bgstats=links(records))


@bp.get("/history/<int:game_id>")
def history_game_page(game_id: int):
    detail = _detail(game_id, request_language())
    detail["steps"] = [json.loads(step) for step in detail["steps"]]
    from .plays import links          # "Add to BG Stats", in the HTML: no script needed
    record = _record(game_id)
    return _page("history_game.html", "history-game", boot={"detail": detail},
                 detail=detail, record=detail["record"], state=detail["state"], token_scored=TOKEN_SCORED,
                 bgstats=links([record]).get(game_id))


@bp.get("/stats")
def stats_page():
    language = request_language()
    players, named = _player_stats()
    titles = _stats_titles(players, named, language)
    return _page("stats.html", "stats", boot={"stats": {"players": players, "titles": titles}},
                 players=players, titles=titles, any_finished=any(p["played"] for p in players))
