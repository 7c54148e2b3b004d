"""A box's game lines arriving at the hub (contract point 1).

Each post is one transaction: the game's row is locked, the lines the hub
already holds are compared with the ones sent again (equal: skipped;
different: 409 with ``differs``, and the box then sends its whole log with
``replace``), the whole game is replayed with the rules core of ``companion
replay`` (an illegal line: 422, nothing stored), the new lines are stored,
and the league follows the game in the same transaction: a first finish gets
its seats, rating update and tournament result; a result taken back or
changed later (lines after the finish: an undo, a bid played again) is
re-rated from its place on.  So a post either happens whole or not at all,
and sending it again after a lost answer changes nothing.
"""

from __future__ import annotations

import json

from companion.errors import CompanionError
from companion.i18n import translate_error
from companion.store import dump_action
from companion.timeline import ReplayError, replay

from . import league, tournament

MAX_LINES = 20000        # a whole Costly Tricks match card by card is a few hundred


class Refusal(Exception):
    def __init__(self, status: int, payload: dict):
        super().__init__(payload.get("error"))
        self.status, self.payload = status, payload


def check_body(body) -> tuple[int, list[dict], bool]:
    if not isinstance(body, dict):
        raise Refusal(400, {"error": "the body must be a JSON object {from, lines, finished}"})
    start, lines, replace = body.get("from"), body.get("lines"), body.get("replace", False)
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise Refusal(400, {"error": "'from' must be a whole number of lines (0 or more)"})
    if not isinstance(lines, list) or not all(isinstance(a, dict) for a in lines):
        raise Refusal(400, {"error": "'lines' must be a list of action objects"})
    if not isinstance(replace, bool) or (replace and (start != 0 or not lines)):
        raise Refusal(400, {"error": "'replace' is true or false; a replacement sends the whole log from 0"})
    if start + len(lines) > MAX_LINES:
        raise Refusal(413, {"error": f"a game of more than {MAX_LINES} lines is not accepted"})
    return start, lines, replace


def post_lines(conn, box: dict, box_game: int, body) -> dict:
    """Store lines ``from+1 …`` of a box's game (or, with ``replace``, the
    whole log anew); return ``{"have": H}`` or raise Refusal.

    The league follows the log: a game rated before and now unfinished (an
    undo after the finish), or finished with other ranks, is re-rated
    (:func:`league.settle`) and its tournament table follows it."""
    start, sent, replace = check_body(body)
    with conn.transaction():
        # The row first (placeholder values until the game is validated), so
        # two posts of the same new game wait for each other here.
        conn.execute("INSERT INTO games (box_id, box_game, game, players) VALUES (%s, %s, '', '[]') "
                     "ON CONFLICT (box_id, box_game) DO NOTHING", (box["id"], box_game))
        # FOR NO KEY UPDATE: two posts of one game still wait for each other,
        # but a re-rating under way (it holds the game kind's lock and writes
        # rating steps whose foreign key share-locks this row) does not wait
        # for us while we wait for that lock: no deadlock.
        row = conn.execute("SELECT id, game, lines, finish_seq FROM games WHERE box_id = %s AND box_game = %s "
                           "FOR NO KEY UPDATE", (box["id"], box_game)).fetchone()
        have = row["lines"]
        stored = [r["line"] for r in conn.execute("SELECT line FROM lines WHERE game_id = %s ORDER BY n",
                                                  (row["id"],)).fetchall()]
        if replace:
            # The box's public log changed other than by growing: the hub's
            # copy becomes the one sent.
            log = [dump_action(a) for a in sent]
            if [json.loads(line) for line in stored] == sent:
                return {"have": have}
            keep = 0
        else:
            if start > have:
                raise Refusal(409, {"error": f"line {start + 1} comes after a gap: the hub has {have} lines",
                                    "have": have})
            for index in range(start, min(have, start + len(sent))):
                if json.loads(stored[index]) != sent[index - start]:
                    raise Refusal(409, {"error": f"line {index + 1} differs from the one the hub has",
                                        "have": have, "differs": index + 1})
            new = [dump_action(a) for a in sent[have - start:]]
            if not new:
                return {"have": have}
            log, keep = stored + new, have
        try:
            timeline = replay(log)
        except ReplayError as exc:
            raise Refusal(422, {"error": f"line {exc.line}: {translate_error(exc.error, 'en')}", "have": have}) from None
        except CompanionError as exc:          # pragma: no cover  (replay wraps every refusal)
            raise Refusal(422, {"error": translate_error(exc, "en"), "have": have}) from None
        with conn.cursor() as cur:
            if keep == 0:
                cur.execute("DELETE FROM lines WHERE game_id = %s", (row["id"],))
            cur.executemany("INSERT INTO lines (game_id, n, line) VALUES (%s, %s, %s)",
                            [(row["id"], n, line) for n, line in enumerate(log[keep:], start=keep + 1)])
        public = timeline.public()
        conn.execute("UPDATE games SET game = %s, players = %s, lines = %s, public = %s, updated = now() "
                     "WHERE id = %s", (timeline.game.id, json.dumps(list(timeline.players)), len(log),
                                       json.dumps(public), row["id"]))
        if league.settle(conn, row["id"], row["game"], row["finish_seq"], timeline.game.id, public,
                         timeline.finished):
            tournament.follow(conn, box["id"], row["id"], timeline.game.id, list(timeline.players),
                              timeline.finished)
        return {"have": len(log)}
