"""A reader of BG Stats plays written from BG Stats' published field list,
not from the table's exporter (it imports nothing of ``companion``).

BG Stats' support page "Push plays to BG Stats from other apps or websites"
describes the link ``https://app.bgstatsapp.com/createPlay.html?data=<JSON>``
(the JSON URL-encoded) and the JSON's fields:

* ``sourceName`` (required, the app's name), ``sourcePlayId`` (the play's
  id in that app), ``playDate`` (required: UTC, ``yyyy-MM-dd HH:mm:ss``),
  ``location``, ``durationMin`` (whole minutes), ``comments``, ``board``;
* ``game`` (required): ``name`` (required), ``sourceGameId``, ``bggId``
  (BoardGameGeek's number), ``highestWins``, ``noPoints``;
* ``players``: each ``name``, ``sourcePlayerId``, ``score``, ``winner``,
  ``startPlayer``, ``rank``, ``role``.  (BG Stats' Android app refuses a
  player without ``winner``: this reader asks for it.)

A field outside this list, or of another type, is an error here: a typo in
the exporter must not pass as an ignored extra.  The CSV reader reads the
spreadsheet file by its header (English) and its byte-order mark.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import parse_qsl, urlsplit

CREATE_PLAY = ("https", "app.bgstatsapp.com", "/createPlay.html")

PLAY_FIELDS = {"sourceName": str, "sourcePlayId": str, "playDate": str, "location": str, "durationMin": int,
               "comments": str, "board": str, "game": dict, "players": list}
GAME_FIELDS = {"name": str, "sourceGameId": str, "bggId": int, "highestWins": bool, "noPoints": bool}
PLAYER_FIELDS = {"name": str, "sourcePlayerId": str, "score": (int, float), "winner": bool,
                 "startPlayer": bool, "rank": int, "role": str}
DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


class Invalid(AssertionError):
    pass


@dataclass
class Play:
    source_id: str | None
    date: datetime                  # aware, UTC
    minutes: int | None
    location: str | None
    game: str
    bgg: int | None
    players: list[str]
    player_ids: list[str]
    scores: list                    # per player, None where not given
    winners: list[str]
    ranks: list
    start: list[str]                # names of the start player(s)


def _typed(where: str, obj: dict, fields: dict, required=()) -> None:
    if not isinstance(obj, dict):
        raise Invalid(f"{where}: not an object")
    for key in required:
        if key not in obj:
            raise Invalid(f"{where}: '{key}' is required")
    for key, value in obj.items():
        if key not in fields:
            raise Invalid(f"{where}: '{key}' is not a field of a BG Stats play")
        kind = fields[key]
        if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else ()):
            raise Invalid(f"{where}: '{key}' is a boolean")
        if not isinstance(value, kind):
            raise Invalid(f"{where}: '{key}' is {type(value).__name__}")


def read_play(data: dict) -> Play:
    _typed("play", data, PLAY_FIELDS, ("sourceName", "playDate", "game"))
    if not data["sourceName"].strip():
        raise Invalid("play: empty sourceName")
    if not DATE.fullmatch(data["playDate"]):
        raise Invalid(f"play: playDate {data['playDate']!r} is not yyyy-MM-dd HH:mm:ss")
    when = datetime.strptime(data["playDate"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    if data.get("durationMin", 0) < 0:
        raise Invalid("play: negative durationMin")
    game = data["game"]
    _typed("game", game, GAME_FIELDS, ("name",))
    if not game["name"].strip():
        raise Invalid("game: empty name")
    if "bggId" in game and game["bggId"] <= 0:
        raise Invalid("game: bggId is not a BoardGameGeek number")
    players = data.get("players", [])
    for n, player in enumerate(players):
        _typed(f"player {n}", player, PLAYER_FIELDS, ("name", "winner"))
        if "rank" in player and player["rank"] < 1:
            raise Invalid(f"player {n}: rank below 1")
    return Play(
        source_id=data.get("sourcePlayId"), date=when, minutes=data.get("durationMin"),
        location=data.get("location"), game=game["name"], bgg=game.get("bggId"),
        players=[p["name"] for p in players], player_ids=[p.get("sourcePlayerId") for p in players],
        scores=[p.get("score") for p in players], winners=[p["name"] for p in players if p["winner"]],
        ranks=[p.get("rank") for p in players], start=[p["name"] for p in players if p.get("startPlayer")])


def read_link(url: str) -> Play:
    parts = urlsplit(url)
    if (parts.scheme, parts.netloc, parts.path) != CREATE_PLAY:
        raise Invalid(f"not a BG Stats createPlay link: {url[:80]}")
    query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
    if [k for k, _v in query] != ["data"]:
        raise Invalid("the link must carry exactly one 'data' parameter")
    return read_play(json.loads(query[0][1]))


def read_jsonl(data: bytes) -> list[Play]:
    text = data.decode("utf-8")             # strict: a file that is not UTF-8 fails here
    if text and not text.endswith("\n"):
        raise Invalid("the last line is not ended")
    return [read_play(json.loads(line)) for line in text.splitlines()]


CSV_HEADER = ["play", "game", "date (UTC)", "minutes", "location", "seat", "player", "score", "winner",
              "rank", "start player"]


def read_csv(data: bytes) -> dict[str, list[dict]]:
    """{play number: [row per player, by seat]}, each row by header name."""
    if not data.startswith(b"\xef\xbb\xbf"):
        raise Invalid("no UTF-8 byte-order mark: a spreadsheet would misread the accents")
    rows = list(csv.reader(io.StringIO(data[3:].decode("utf-8"), newline="")))
    if rows[0] != CSV_HEADER:
        raise Invalid(f"header {rows[0]}")
    out: dict[str, list[dict]] = {}
    for row in rows[1:]:
        if len(row) != len(CSV_HEADER):
            raise Invalid(f"row of {len(row)} cells: {row}")
        entry = dict(zip(CSV_HEADER, row))
        if entry["winner"] not in ("0", "1"):
            raise Invalid(f"winner cell {entry['winner']!r}")
        if not DATE.fullmatch(entry["date (UTC)"]):
            raise Invalid(f"date cell {entry['date (UTC)']!r}")
        out.setdefault(entry["play"], []).append(entry)
    return out
