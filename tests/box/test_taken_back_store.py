"""Taken back means gone, at the table: the box, the web exports, the store's
own files and the backups (issue 13, finding 3), and a store written before
the rule."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from companion.session import TableSession
from companion.store import DB_NAME, Store, dump_action
from companion.timeline import replay
from hardware import Box
from hardware.testing import box_config
from web_support import make_app, pin_headers

from box_support import mock_factory  # noqa: F401 (fixture)

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]
BEN_7 = b'{"type": "bid", "seat": 1, "card": 7}'


def raw_files(folder: Path) -> dict[str, bytes]:
    """Every file the companion wrote under its data folder, as raw bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def holding(folder: Path, needle: bytes) -> list[str]:
    return [name for name, data in raw_files(folder).items() if needle in data]


def moves_to(hand: list[int], card: int) -> list[str]:
    i = hand.index(card)
    return ["up"] * i if i <= len(hand) - i else ["down"] * (len(hand) - i)


@pytest.fixture
def table(tmp_path, mock_factory):
    store = Store(tmp_path)
    session = TableSession(store)
    box = Box(session, box_config(), mock=True, pin_factory=mock_factory)
    box.start()
    app = make_app(session, box=box)
    yield session, box, app.test_client()
    app.extensions["companion"].close()
    box.close()
    store.close()


def lock_on_the_box(box, session, lead_card, secret):
    """The lead shows ``lead_card`` (unless None: already shown), then each
    (seat, card) of ``secret`` in turn locks its card on the buttons."""
    if lead_card is not None:
        box.press("ok")
        for key in moves_to(session.public()["hands"][0], lead_card):
            box.press(key)
        box.press("ok")                                      # the lead's card, face up
    for seat, card in secret:
        assert session.public()["players"][seat] in " ".join(box.frame.texts)   # "pass the box to ..."
        box.press("ok")                                      # the seat has the box
        for key in moves_to(session.public()["hands"][seat], card):
            box.press(key)
        box.press("ok")                                      # locked


def test_finding_3_ben_locks_7_on_the_box_undo_and_the_export_never_holds_it(table, tmp_path):
    session, box, client = table
    assert client.post("/api/actions", json={"type": "new_game", "game": "third-man", "players": PLAYERS},
                       headers=pin_headers()).status_code == 200
    gid = session.game_id
    box.flush()
    lock_on_the_box(box, session, 5, [(1, 7)])               # Ann shows 5, Ben locks 7
    assert session.public()["pending"] == {"lead_card": 5, "entered": [0, 1]}
    r = client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers())
    assert r.status_code == 409                              # pending: the full export is refused
    assert client.post("/api/actions", json={"type": "undo"}, headers=pin_headers()).status_code == 200
    assert session.public()["pending"] == {"lead_card": 5, "entered": [0]}
    routes = [f"/api/history/{gid}/export.jsonl", f"/api/history/{gid}", f"/api/history/{gid}/export.csv",
              "/api/history/current"]
    for path in routes:
        for headers in ({}, pin_headers()):
            r = client.get(path, headers=headers)
            assert r.status_code in (200, 404), (path, r.status_code)
            assert BEN_7 not in r.data and b'"card":7' not in r.data.replace(b" ", b""), path
    full = client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers())
    assert full.status_code == 200 and full.data.count(b"\n") == 2      # new_game and Ann's 5
    assert not holding(tmp_path, BEN_7)
    # The bid is then revealed with another card: 7 stays out.
    box.flush()
    lock_on_the_box(box, session, None, [(1, 3), (2, 8), (3, 1)])
    assert session.public()["last"]["cards"] == [5, 3, 8, 1]
    full = client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers())
    assert full.status_code == 200
    assert [json.loads(line) for line in full.data.decode().splitlines()] == [
        {"type": "new_game", "game": "third-man", "players": PLAYERS},
        {"type": "bid", "seat": 0, "card": 5}, {"type": "bid", "seat": 1, "card": 3},
        {"type": "bid", "seat": 2, "card": 8}, {"type": "bid", "seat": 3, "card": 1}]
    assert replay(full.data.decode().splitlines()).public() == session.public()
    assert not holding(tmp_path, BEN_7)


def test_the_undone_value_leaves_the_database_files_and_the_backups(tmp_path):
    # A scoreboard ends mid secret round (target reached), so its backup holds
    # the pending secret; the table then takes the add and the secret back.
    secret = 987654321
    store = Store(tmp_path)
    session = TableSession(store)
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"], "options": {"target": 5}})
    session.submit({"type": "secret", "seat": 0, "value": secret})
    for _ in range(400):                      # enough lines after it to split the table's pages
        session.submit({"type": "add", "seat": 1, "points": 1})
        session.submit({"type": "undo"})
    session.submit({"type": "add", "seat": 1, "points": 5})
    gid = session.game_id
    assert store.game(gid).finished
    needle = str(secret).encode()
    assert holding(tmp_path, needle)          # the test can fail: the value is there now
    session.submit({"type": "undo"})
    session.submit({"type": "undo"})          # takes the secret back, never revealed
    assert session.public()["entered"] == [] and session.public()["scores"] == [0, 0]
    assert not holding(tmp_path, needle), holding(tmp_path, needle)
    lines = store.lines(gid)
    assert len(lines) == 1 + 800 + 2 and all(needle not in line.encode() for line in lines)
    assert replay(lines).state == session.timeline.state
    store.close()
    # Reopened (as after a restart): the same public log, the same state.
    again = TableSession(Store(tmp_path))
    assert again.game_id == gid and again.timeline.state == session.timeline.state
    assert not holding(tmp_path, needle)
    again.store.close()


def test_every_acknowledged_action_is_in_the_store_after_a_take_back(tmp_path):
    store = Store(tmp_path)
    session = TableSession(store)
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    for action in ({"type": "bid", "seat": 0, "card": 5}, {"type": "bid", "seat": 2, "card": 9},
                   {"type": "bid", "seat": 1, "card": 7}, {"type": "undo"}, {"type": "bid", "seat": 1, "card": 2}):
        session.submit(action)
    db = sqlite3.connect(tmp_path / DB_NAME)             # a second reader sees the committed log
    rows = db.execute("SELECT seq, line FROM actions WHERE game_id=? ORDER BY seq", (session.game_id,)).fetchall()
    db.close()
    assert [seq for seq, _ in rows] == [1, 2, 3, 4]
    assert [json.loads(line) for _, line in rows][1:] == [
        {"type": "bid", "seat": 0, "card": 5}, {"type": "bid", "seat": 2, "card": 9},
        {"type": "bid", "seat": 1, "card": 2}]
    store.close()


def old_store(folder: Path, raw: list[dict]) -> int:
    """A store as written before the rule: every line kept, undo included."""
    store = Store(folder)
    gid = store.create_game(raw[0]["game"], raw[0]["players"], dump_action(raw[0]))
    for seq, action in enumerate(raw[1:], start=2):
        store.append(gid, seq, dump_action(action), False, None)
    store.db.execute("PRAGMA user_version=0")
    store.close()
    return gid


def test_a_store_written_before_the_rule_is_tidied_and_still_replays(tmp_path):
    raw = [{"type": "new_game", "game": "third-man", "players": PLAYERS},
           {"type": "bid", "seat": 0, "card": 5}, {"type": "bid", "seat": 1, "card": 7}, {"type": "undo"},
           {"type": "bid", "seat": 1, "card": 3}, {"type": "bid", "seat": 2, "card": 8}]
    gid = old_store(tmp_path, raw)
    before = replay([dump_action(a) for a in raw])
    assert holding(tmp_path, BEN_7)
    session = TableSession(Store(tmp_path))
    assert session.game_id == gid
    assert session.timeline.state == before.state
    assert [json.loads(line) for line in session.store.lines(gid)] == raw[:2] + raw[4:]
    assert not holding(tmp_path, BEN_7), holding(tmp_path, BEN_7)
    session.submit({"type": "bid", "seat": 3, "card": 1})            # the table goes on
    assert session.public()["last"]["cards"] == [5, 3, 8, 1]
    session.store.close()


def test_a_pair_the_tidying_missed_is_dropped_when_the_game_is_resumed(tmp_path):
    raw = [{"type": "new_game", "game": "third-man", "players": PLAYERS},
           {"type": "bid", "seat": 0, "card": 5}, {"type": "bid", "seat": 1, "card": 7}, {"type": "undo"}]
    gid = old_store(tmp_path, raw)
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute("PRAGMA user_version=1")          # as if the tidying had run and failed on this game
    db.commit()
    db.close()
    session = TableSession(Store(tmp_path))
    assert session.game_id == gid and session.store.lines(gid) == [dump_action(a) for a in raw[:2]]
    session.submit({"type": "bid", "seat": 1, "card": 3})     # line numbers agree with the store
    assert [json.loads(line) for line in session.store.lines(gid)][2] == {"type": "bid", "seat": 1, "card": 3}
    session.store.close()


def test_the_current_history_follows_a_take_back(tmp_path):
    # The log is as long after the take-back as it was two actions before:
    # the page's cache must not answer with that older history.
    session = TableSession(Store(tmp_path))
    app = make_app(session)
    client = app.test_client()
    for action in ({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]},
                   {"type": "secret", "seat": 0, "value": 4242}, {"type": "add", "seat": 1, "points": 3}):
        session.submit(action)
    assert len(client.get("/api/history/current").json["steps"]) == 3
    session.submit({"type": "undo"})
    session.submit({"type": "undo"})
    body = client.get("/api/history/current")
    assert b"4242" not in body.data
    assert [s["action"]["type"] for s in body.json["steps"]] == ["new_game"]
    app.extensions["companion"].close()
    session.store.close()


def test_an_imported_log_is_stored_as_its_public_log(tmp_path):
    session = TableSession(Store(tmp_path))
    app = make_app(session)
    raw = [{"type": "new_game", "game": "third-man", "players": PLAYERS},
           {"type": "bid", "seat": 0, "card": 5}, {"type": "bid", "seat": 1, "card": 7}, {"type": "undo"}]
    r = app.test_client().post("/api/history/import", headers=pin_headers(),
                               data="".join(dump_action(a) + "\n" for a in raw))
    assert r.status_code == 200, r.json
    assert session.store.lines(r.json["id"]) == [dump_action(a) for a in raw[:2]]
    assert r.json["state"] == replay([dump_action(a) for a in raw]).public()
    assert not holding(tmp_path, BEN_7)
    app.extensions["companion"].close()
    session.store.close()
