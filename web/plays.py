"""Finished games for BG Stats and spreadsheets, on the phones (docs/api.md,
"Plays for BG Stats and spreadsheets").

* :func:`links` — the "Add to BG Stats" link of each finished game of a
  history page, worked out from the store's rows (no replay): the pages put
  it in their HTML, so it works without JavaScript.
* ``GET /api/history/plays.jsonl`` and ``/api/history/plays.csv`` — every
  finished game (``?from=``/``?to=`` dates, the box's days) as BG Stats
  payloads, one per line, or one CSV row per player per play.

Every play is made of public facts only (:mod:`companion.plays`): a phone
gets the same bytes whatever the secrets entered and whoever asks.  The
store is read under the session's lock; the mapping runs outside it, one
whole-history export at a time (the store's generation keeps the last one).
"""

from __future__ import annotations

import threading
from datetime import date

from flask import Blueprint, Response, current_app, request

from companion import plays
from companion.config import DEFAULTS
from companion.i18n import N_

from .app import companion
from .errors import ApiError, request_language

bp = Blueprint("plays", __name__)

EXPORTING = threading.Lock()     # one whole-history export at a time
CHUNK = 200                      # games read from the store per hold of the session's lock


def table_name() -> str:
    """The table's name (setting ``name``: the name it has on the network)."""
    name = companion().config.get("name", DEFAULTS["name"])
    return name if isinstance(name, str) else DEFAULTS["name"]


def links(records) -> dict[int, dict]:
    """``{game id: {"url": link or None, "too_long": bool}}`` for the
    finished games among ``records`` (GameRecord values with summaries)."""
    done = [r for r in records if r.finished]
    if not done:
        return {}
    session = companion().session
    with session.lock:
        firsts = session.store.first_lines([r.id for r in done])
        seats = session.store.seat_players(ids=[r.id for r in done])
        names = session.store.roster_names()
    out = {}
    table = table_name()
    for record in done:
        facts = plays.facts_of(record, firsts.get(record.id), seats.get(record.id, ()), names, table)
        if facts is None or record.summary is None:
            continue
        try:
            out[record.id] = {"url": plays.link(plays.play(facts)), "too_long": False}
        except plays.TooLong:
            out[record.id] = {"url": None, "too_long": True}
    return out


def _day(name: str) -> date | None:
    text = request.args.get(name, "").strip()
    if not text:
        return None
    try:
        if len(text) != 10:
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise ApiError(400, N_("'{name}' must be a date written YYYY-MM-DD, got '{value}'"),
                       name=name, value=text[:24]) from None


def _all_plays(first: date | None, last: date | None) -> list[tuple[int, dict]]:
    """``(game number, payload)`` of every finished game in the dates, oldest first.

    The store is read CHUNK games at a time, the session's lock taken for
    each chunk only: the box's thread waits for one chunk at most, never
    for the whole history (10,000 games read in one go held it for seconds:
    ``python -m bench --only bench_history``).  What a store change makes
    stale is found by the generation read first; the plays are kept for it."""
    session = companion().session
    cache = current_app.extensions.setdefault("companion.plays", {})
    table = table_name()
    with EXPORTING:
        with session.lock:
            generation = session.store.generation
            ids = session.store.finished_ids() if cache.get("key") != (generation, table) else None
        if ids is not None:
            made = []
            for start in range(0, len(ids), CHUNK):
                with session.lock:
                    rows = plays.store_rows(session.store, ids[start:start + CHUNK])
                made += [(f, plays.play(f)) for f in plays.facts_from_rows(rows, table)]
            made.sort(key=lambda pair: (pair[0].started, pair[0].id))
            cache.clear()
            cache.update(key=(generation, table), plays=made)
        return [(f.id, payload) for f, payload in cache["plays"] if plays.within(f, first, last)]


def _download(body: str, mimetype: str, filename: str) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/history/plays.jsonl")
def plays_jsonl():
    first, last = _day("from"), _day("to")
    found = _all_plays(first, last)
    return _download(plays.jsonl(p for _n, p in found), "application/x-ndjson", "plays-bgstats.jsonl")


@bp.get("/api/history/plays.csv")
def plays_csv():
    first, last = _day("from"), _day("to")
    found = _all_plays(first, last)
    return _download(plays.csv_text(found, request_language()), "text/csv; charset=utf-8", "plays.csv")
