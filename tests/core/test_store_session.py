"""The game log and the table session: durable, resumable, single writer."""

from __future__ import annotations

import json
import sqlite3

import pytest

from companion.errors import ActionError
from companion.session import TableSession
from companion.store import Store
from companion.timeline import replay


def new(players=("Ann", "Ben"), **options):
    a = {"type": "new_game", "game": "scoreboard", "players": list(players)}
    if options:
        a["options"] = options
    return a


def test_an_accepted_action_is_stored_before_it_is_acknowledged(session, store):
    session.submit(new())
    session.submit({"type": "add", "seat": 0, "points": 3})
    other = sqlite3.connect(store.path)  # a second reader sees it at once: it is committed
    rows = other.execute("SELECT line FROM actions ORDER BY seq").fetchall()
    assert [json.loads(r[0])["type"] for r in rows] == ["new_game", "add"]


def test_a_refused_action_stores_nothing_and_announces_nothing(session, store):
    session.submit(new())
    seen = []
    session.subscribe(seen.append)
    with pytest.raises(ActionError):
        session.submit({"type": "add", "seat": 5, "points": 3})
    with pytest.raises(ActionError):
        session.submit({"type": "new_game", "game": "scoreboard", "players": []})
    assert seen == []
    assert len(store.lines(session.game_id)) == 1


def test_subscribers_hear_every_change_in_order_with_public_state_only(session):
    seen = []
    session.subscribe(seen.append)
    session.submit(new())
    session.submit({"type": "secret", "seat": 0, "value": 4242})
    session.submit({"type": "undo"})
    assert [c.kind for c in seen] == ["new_game", "action", "undo"]
    assert [c.version for c in seen] == [1, 2, 3]
    assert seen[1].secret is True
    assert "4242" not in json.dumps([c.state for c in seen])


def test_new_game_stores_the_old_one_and_opens_a_new_log(session, store):
    session.submit(new())
    session.submit({"type": "add", "seat": 1, "points": 2})
    first = session.game_id
    session.submit(new(players=("Zoë", "Łukasz", "Chloé")))
    assert session.game_id != first
    assert session.public()["players"] == ["Zoë", "Łukasz", "Chloé"]
    assert len(store.lines(first)) == 2
    assert [g.id for g in store.games()] == [session.game_id, first]


def test_the_latest_unfinished_game_resumes_at_start(tmp_path):
    store = Store(tmp_path)
    s = TableSession(store)
    s.submit(new(target=5))
    s.submit({"type": "add", "seat": 0, "points": 3})
    s.submit(new(players=("Cat", "Dan"), target=5))
    s.submit({"type": "add", "seat": 1, "points": 9})   # finished
    store.close()
    again = TableSession(Store(tmp_path))
    assert again.public()["players"] == ["Ann", "Ben"]
    assert again.public()["scores"] == [3, 0]


def test_a_finished_game_is_not_resumed(tmp_path):
    s = TableSession(Store(tmp_path))
    s.submit(new(target=5))
    s.submit({"type": "add", "seat": 0, "points": 6})
    assert TableSession(Store(tmp_path)).public() == {"game": None}


def test_stored_log_is_the_replay_format(session, store):
    session.submit(new())
    session.submit({"type": "add", "seat": 0, "points": -4})
    session.submit({"type": "token", "seat": 1, "delta": 1})
    session.submit({"type": "undo"})
    assert replay(store.lines(session.game_id)).public() == session.public()


def test_a_damaged_file_is_moved_aside_and_what_can_be_read_is_kept(tmp_path):
    s = TableSession(Store(tmp_path))
    s.submit(new())
    s.submit({"type": "add", "seat": 0, "points": 1})
    s.store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    s.store.close()
    db = tmp_path / "companion.db"
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\x00" * (4096 - 100)   # smash the first page past the header
    db.write_bytes(bytes(data))
    store = Store(tmp_path)
    assert store.warnings, "the damage is reported"
    assert list(tmp_path.glob("companion.db.damaged-*"))
    TableSession(store).public()   # and the companion keeps running


def test_a_finished_game_is_copied_to_the_rolling_backup(session, store):
    session.submit(new(target=3))
    session.submit({"type": "add", "seat": 0, "points": 4})
    backups = list((store.dir / "backups").glob("game-*.jsonl"))
    assert len(backups) == 1
    assert replay(backups[0].read_text().splitlines()).public()["winner"] == [0]


def test_the_backup_keeps_only_the_newest(store):
    s = TableSession(store)
    for _ in range(4):
        s.submit(new(target=1))
        s.submit({"type": "add", "seat": 1, "points": 1})
    for gid in range(1, 5):
        store.backup(gid, keep=2)
    names = sorted(p.name for p in (store.dir / "backups").glob("game-*.jsonl"))
    assert names == ["game-000003-scoreboard.jsonl", "game-000004-scoreboard.jsonl"]


def test_a_stored_game_can_be_resumed_and_continued(session, store):
    session.submit(new())
    session.submit({"type": "add", "seat": 0, "points": 2})
    first = session.game_id
    session.submit(new(players=("Cat", "Dan")))
    seen = []
    session.subscribe(seen.append)
    session.resume(first)
    assert seen[-1].kind == "resume"
    session.submit({"type": "add", "seat": 1, "points": 5})
    assert session.public()["scores"] == [2, 5]
    assert len(store.lines(first)) == 3


def test_import_stores_a_valid_log_and_refuses_a_bad_one(session, store):
    from companion.timeline import ReplayError

    lines = [json.dumps(new()), json.dumps({"type": "add", "seat": 1, "points": 3})]
    gid = session.import_log(lines)
    assert replay(store.lines(gid)).public()["scores"] == [0, 3]
    before = len(store.games())
    with pytest.raises(ReplayError) as info:
        session.import_log(lines + ['{"type": "add", "seat": 7, "points": 1}'])
    assert info.value.line == 3
    assert len(store.games()) == before


def test_resuming_a_damaged_log_is_a_clear_refusal(session, store):
    from companion.errors import IllegalActionError

    session.submit(new())
    first = session.game_id
    session.submit(new(players=("Cat", "Dan")))
    store.db.execute("UPDATE actions SET line='{\"type\": \"add\", \"seat\": 9, \"points\": 1}' WHERE game_id=? AND seq=1",
                     (first,))
    with pytest.raises(IllegalActionError, match="cannot be resumed"):
        session.resume(first)
    assert session.public()["players"] == ["Cat", "Dan"]
