"""A box's game lines arriving at the hub (contract point 1).

Each post is one transaction: the game's row is locked, the lines the hub
already holds are compared with the ones sent again (equal: skipped; different:
409), the whole game is replayed with the rules core of ``companion replay``
(an illegal line: 422, nothing stored), the new lines are stored, and a game
that has just finished gets its seats, its rating update and its tournament
result in the same transaction.  So a post either happens whole or not at all,
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


def check_body(body) -> tuple[int, list[dict]]:
    if not isinstance(body, dict):
        raise Refusal(400, {"error": "the body must be a JSON object {from, lines, finished}"})
    start, lines = body.get("from"), body.get("lines")
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise Refusal(400, {"error": "'from' must be a whole number of lines (0 or more)"})
    if not isinstance(lines, list) or not all(isinstance(a, dict) for a in lines):
        raise Refusal(400, {"error": "'lines' must be a list of action objects"})
    if start + len(lines) > MAX_LINES:
        raise Refusal(413, {"error": f"a game of more than {MAX_LINES} lines is not accepted"})
    return start, lines


def post_lines(conn, box: dict, box_game: int, body) -> dict:
    """Store lines ``from+1 …`` of a box's game; return ``{"have": H}`` or raise Refusal."""
    start, sent = check_body(body)
    with conn.transaction():
        # The row first (placeholder values until the game is validated), so
        # two posts of the same new game wait for each other here.
        conn.execute("INSERT INTO games (box_id, box_game, game, players) VALUES (%s, %s, '', '[]') "
                     "ON CONFLICT (box_id, box_game) DO NOTHING", (box["id"], box_game))
        row = conn.execute("SELECT id, lines, finish_seq FROM games WHERE box_id = %s AND box_game = %s FOR UPDATE",
                           (box["id"], box_game)).fetchone()
        have = row["lines"]
        if start > have:
            raise Refusal(409, {"error": f"line {start + 1} comes after a gap: the hub has {have} lines", "have": have})
        stored = [r["line"] for r in conn.execute("SELECT line FROM lines WHERE game_id = %s ORDER BY n",
                                                  (row["id"],)).fetchall()]
        for index in range(start, min(have, start + len(sent))):
            if json.loads(stored[index]) != sent[index - start]:
                raise Refusal(409, {"error": f"line {index + 1} differs from the one the hub has", "have": have})
        new = [dump_action(a) for a in sent[have - start:]]
        if not new:
            return {"have": have}
        try:
            timeline = replay(stored + new)
        except ReplayError as exc:
            raise Refusal(422, {"error": f"line {exc.line}: {translate_error(exc.error, 'en')}", "have": have}) from None
        except CompanionError as exc:          # pragma: no cover  (replay wraps every refusal)
            raise Refusal(422, {"error": translate_error(exc, "en"), "have": have}) from None
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO lines (game_id, n, line) VALUES (%s, %s, %s)",
                            [(row["id"], have + i, line) for i, line in enumerate(new, start=1)])
        public = timeline.public()
        conn.execute("UPDATE games SET game = %s, players = %s, lines = %s, public = %s, updated = now() "
                     "WHERE id = %s", (timeline.game.id, json.dumps(list(timeline.players)), have + len(new),
                                       json.dumps(public), row["id"]))
        if timeline.finished and row["finish_seq"] is None:
            league.record_finish(conn, row["id"], timeline.game.id, public)
            tournament.record_result(conn, box["id"], row["id"], timeline.game.id, list(timeline.players))
        return {"have": have + len(new)}
