"""A bounded store (issue 21, point 4; companion/store.py, companion/limits.py).

As found: with the PIN (public at the table), 300 imports of a 5,000-line
log stored 118 MB in 74 s; the first history listing afterwards took 67 s,
and past 4,096 games the history cache emptied during a listing, so every
listing replayed every game.  Now each game's summary is kept in the store
when the game changes (the listing reads it, never replays), the listing is
paged, the store holds at most so many games and bytes (the oldest finished
games pruned to backups/pruned/, or a new game refused: the operator's
choice), and imports are rate-limited.  What a listing costs at 10 and at
10,000 games is bench_history's figure, not a test's.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import companion.store as store_module
from companion.errors import ActionError
from companion.limits import Bucket, StoreLimits
from companion.session import TableSession
from companion.store import Store, StoreFull, folded_summary
from companion.timeline import replay
from secret_games import SECRET_GAMES, candidate, new_game, secret_entry
from web_support import make_app, pin_headers


def scoreboard(players=("Ann", "Ben"), target=None):
    action = {"type": "new_game", "game": "scoreboard", "players": list(players)}
    if target:
        action["options"] = {"target": target}
    return action


def replayed(store, game_id) -> dict:
    public = replay(store.lines(game_id)).public()
    return {"scores": public.get("scores"), "tokens": public.get("tokens")}


def finished_game(session, points=5):
    session.submit(scoreboard(target=points))
    session.submit({"type": "add", "seat": 0, "points": points})
    assert session.public()["finished"]
    return session.game_id


# -- the summaries equal what a replay gives -----------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), game=st.sampled_from(SECRET_GAMES))
def test_the_stored_summary_is_what_a_replay_gives_after_every_action(tmp_path_factory, data, game):
    """Random tables of the games with secrets: undo, take-backs of
    unrevealed entries (the pair leaves the log), reveals."""
    store = Store(tmp_path_factory.mktemp("store"))
    session = TableSession(store)
    try:
        session.submit(new_game(data, game))
        for i in range(data.draw(st.integers(5, 40), label="steps")):
            action = secret_entry(data, game, session.timeline) if i % 5 == 4 else \
                candidate(data, game, session.timeline)
            try:
                session.submit(action)
            except ActionError:
                continue
            record = store.game(session.game_id)
            assert record.summary == replayed(store, session.game_id), (i, action)
            assert record.actions == len(store.lines(session.game_id))
            assert record.bytes == sum(len(line.encode()) + 1 for line in store.lines(session.game_id))
    finally:
        store.close()


def test_an_undo_and_a_take_back_keep_the_summary(session, store):
    session.submit(scoreboard(("Ann", "Ben", "Cat")))
    session.submit({"type": "add", "seat": 1, "points": 4})
    session.submit({"type": "secret", "seat": 0, "value": 7})
    session.submit({"type": "undo"})                           # taken back unrevealed: the pair leaves
    assert store.game(session.game_id).summary == {"scores": [0, 4, 0], "tokens": [0, 0, 0]} \
        == replayed(store, session.game_id)
    session.submit({"type": "undo"})                           # the add, undone (logged)
    assert store.game(session.game_id).summary == replayed(store, session.game_id)
    assert store.game(session.game_id).summary["scores"] == [0, 0, 0]


def test_an_older_store_gets_its_summaries_filled_once(tmp_path, monkeypatch):
    store = Store(tmp_path)
    session = TableSession(store)
    session.submit(scoreboard())
    session.submit({"type": "add", "seat": 1, "points": 6})
    first = session.game_id
    finished_game(session, 3)
    store.db.execute("DROP TABLE summaries")                   # as written before summaries
    store.db.execute("PRAGMA user_version=1")
    store.close()
    calls = []
    real = store_module.folded_summary
    monkeypatch.setattr(store_module, "folded_summary", lambda lines: calls.append(1) or real(lines))
    again = Store(tmp_path)
    assert len(calls) == 2, "filled once, when opened"
    assert again.game(first).summary == {"scores": [0, 6], "tokens": [0, 0]}
    again.close()
    Store(tmp_path).close()
    assert len(calls) == 2, "and never again"


def test_a_game_whose_summary_is_not_known_gets_it_when_listed(store):
    session = TableSession(store)
    session.submit(scoreboard())
    store.append(session.game_id, 2, json.dumps({"type": "add", "seat": 0, "points": 2}), False, None)
    assert store.game(session.game_id).summary is None          # a caller that gave no state
    records, total = store.page()
    assert total == 1 and records[0].summary == {"scores": [2, 0], "tokens": [0, 0]}


# -- the listing: paged, from the store's rows, never a replay -------------------------------

def test_the_listing_never_replays_and_is_paged(session, store, monkeypatch):
    for n in range(60):
        session.submit(scoreboard((f"Ann {n}", "Ben")))
        session.submit({"type": "add", "seat": 0, "points": n})
    import companion.timeline

    app = make_app(session)             # first: the web's modules bind the real replay
    client = app.test_client()

    def no_replay(*_args, **_kwargs):
        raise AssertionError("a listing replayed a game")
    monkeypatch.setattr(companion.timeline, "replay", no_replay)
    monkeypatch.setattr(store_module, "folded_summary", no_replay)
    try:
        first = client.get("/api/history").json
        assert len(first["games"]) == 50
        assert first["page"] == {"from": 0, "count": 50, "total": 60, "next": "/api/history?from=50"}
        assert first["games"][0]["players"] == ["Ann 59", "Ben"] and first["games"][0]["scores"] == [59, 0]
        last = client.get("/api/history?from=50").json
        assert [g["scores"][0] for g in last["games"]] == list(range(9, -1, -1))
        assert last["page"]["next"] is None
        mine = client.get("/api/history?player=ann 7").json
        assert [g["players"][0] for g in mine["games"]] == ["Ann 7"]
        assert client.get("/api/history?from=x").status_code == 400
        page = client.get("/history").get_data(as_text=True)
        assert 'id="more-games" href="/history?from=50"' in page
    finally:
        app.extensions["companion"].close()


def test_the_statistics_read_the_summaries_too(session, store, monkeypatch):
    finished_game(session, 4)
    app = make_app(session)
    try:
        monkeypatch.setattr(store_module, "folded_summary", lambda lines: pytest.fail("replayed"))
        players = app.test_client().get("/api/stats").json["players"]
        assert [(p["name"], p["won"]) for p in players] == [("Ann", 1), ("Ben", 0)]
    finally:
        app.extensions["companion"].close()


# -- the limits: prune or refuse ----------------------------------------------------------------

def test_beyond_the_games_limit_the_oldest_finished_games_go_to_backups(tmp_path):
    store = Store(tmp_path, limits=StoreLimits(max_games=4, when_full="prune"))
    session = TableSession(store)
    session.submit(scoreboard(("Una", "Fin")))                    # unfinished, the oldest of all
    unfinished = session.game_id
    finished = [finished_game(session, n + 1) for n in range(3)]
    lines = store.lines(finished[0])
    finished_game(session, 9)                                     # a fifth game: the oldest finished goes
    ids = {g.id for g in store.games()}
    assert unfinished in ids and finished[0] not in ids and len(ids) == 4
    moved = tmp_path / "backups" / "pruned" / f"game-{finished[0]:06d}-scoreboard.jsonl"
    assert moved.read_text(encoding="utf-8").splitlines() == lines, "the whole log, importable again"
    assert store.pruned == [finished[0]]
    assert replay(moved.read_text(encoding="utf-8").splitlines()).public()["finished"]


def test_an_unfinished_game_is_never_pruned(tmp_path):
    store = Store(tmp_path, limits=StoreLimits(max_games=2, when_full="prune"))
    session = TableSession(store)
    session.submit(scoreboard(("Ann", "Ben")))
    session.submit(scoreboard(("Cat", "Dan")))
    before = [g.id for g in store.games()]
    with pytest.raises(StoreFull) as caught:
        session.submit(scoreboard(("Eve", "Fay")))
    assert "only unfinished games" in str(caught.value)
    assert [g.id for g in store.games()] == before and session.public()["players"] == ["Cat", "Dan"]


def test_refuse_is_the_operators_choice_and_says_so(tmp_path):
    store = Store(tmp_path, limits=StoreLimits(max_games=2, when_full="refuse"))
    session = TableSession(store)
    finished_game(session)
    finished_game(session)
    app = make_app(session)
    client = app.test_client()
    try:
        english = client.post("/api/actions", json=scoreboard(), headers=pin_headers())
        french = client.post("/api/actions?lang=fr", json=scoreboard(), headers=pin_headers())
        assert english.status_code == french.status_code == 409
        assert "the game store is full (2 games" in english.json["error"]
        assert 'store_full = "prune"' in english.json["error"]
        assert "le stockage des parties est plein" in french.json["error"]
        assert len(store.games()) == 2 and not (tmp_path / "backups" / "pruned").exists()
    finally:
        app.extensions["companion"].close()


def test_the_bytes_limit_prunes_too_and_a_game_in_progress_goes_on(tmp_path):
    store = Store(tmp_path, limits=StoreLimits(max_bytes=2_000, when_full="prune"))
    session = TableSession(store)
    old = [finished_game(session, n + 1) for n in range(5)]
    session.submit(scoreboard(("Ann", "Ben", "Cat")))
    current = session.game_id
    for n in range(40):                                         # grows past the limit: never refused
        session.submit({"type": "add", "seat": n % 3, "points": 1})
    games, size = store.usage()
    assert current in {g.id for g in store.games()} and len(store.lines(current)) == 41
    assert set(store.pruned) <= set(old) and store.pruned, "older finished games made room"
    assert size <= 2_000 or games == 1


def test_the_limits_come_from_the_settings_and_refuse_nonsense():
    assert StoreLimits.from_config({}) == StoreLimits(10_000, 100_000_000, "prune")
    assert StoreLimits.from_config({"store_max_games": 50, "store_max_mb": 1.5, "store_full": "refuse"}) == \
        StoreLimits(50, 1_500_000, "refuse")
    for bad in ({"store_max_games": 0}, {"store_max_games": "many"}, {"store_max_mb": -1},
                {"store_full": "delete"}):
        with pytest.raises(ValueError):
            StoreLimits.from_config(bad)


def test_companion_run_says_a_bad_setting_in_one_line(tmp_path, companion_cmd):
    import subprocess

    (tmp_path / "companion.toml").write_text('store_full = "delete"\n')
    result = subprocess.run([*companion_cmd, "run", "--mock", "--port", "0", "--data", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert 'store_full must be "prune" or "refuse"' in result.stderr


# -- imports, rate-limited table-wide -----------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_imports_are_rate_limited_for_the_whole_table(session):
    app = make_app(session)
    clock = Clock()
    app.extensions["companion.history.imports"] = Bucket(3, 60.0, clock=clock)
    client = app.test_client()
    body = json.dumps(scoreboard()) + "\n"

    def post(address):
        return client.post("/api/history/import", data=body, headers=pin_headers(),
                           content_type="application/x-ndjson", environ_base={"REMOTE_ADDR": address})
    try:
        assert [post(f"10.0.0.{n}").status_code for n in range(3)] == [200, 200, 200]
        refused = post("10.0.0.9")                     # another address: the same table-wide bucket
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"
        assert "too many imports" in refused.json["error"]
        assert len(session.store.games()) == 3
        clock.now += 60
        assert post("10.0.0.9").status_code == 200
    finally:
        app.extensions["companion"].close()


def test_an_import_beyond_a_full_store_that_refuses_is_a_clear_409(tmp_path):
    store = Store(tmp_path, limits=StoreLimits(max_games=1, when_full="refuse"))
    session = TableSession(store)
    finished_game(session)
    app = make_app(session)
    try:
        r = app.test_client().post("/api/history/import", data=json.dumps(scoreboard()) + "\n",
                                   headers=pin_headers(), content_type="application/x-ndjson")
        assert r.status_code == 409 and "the game store is full" in r.json["error"]
        assert len(store.games()) == 1
    finally:
        app.extensions["companion"].close()


def test_the_summaries_survive_a_damaged_store(tmp_path):
    store = Store(tmp_path)
    session = TableSession(store)
    finished_game(session, 7)
    store.close()
    db = sqlite3.connect(tmp_path / "companion.db")
    db.execute("DELETE FROM summaries")                      # lost with a damaged page, say
    db.commit()
    db.close()
    again = Store(tmp_path)
    assert again.games()[0].summary == {"scores": [7, 0], "tokens": [0, 0]}
    assert folded_summary(again.lines(again.games()[0].id)) == again.games()[0].summary


def test_the_statistics_are_worked_out_once_per_change(session, monkeypatch):
    import web.history

    finished_game(session, 4)
    calls = []
    real = web.history.player_stats
    monkeypatch.setattr(web.history, "player_stats", lambda *a: calls.append(1) or real(*a))
    app = make_app(session)
    client = app.test_client()
    try:
        first = client.get("/api/stats").json
        assert client.get("/api/stats").json == first and client.get("/stats").status_code == 200
        assert len(calls) == 1, "nothing changed: not counted again"
        finished_game(session, 2)
        assert client.get("/api/stats").json["players"][0]["played"] == 2
        assert len(calls) == 2
        client.post("/api/players/1/rename", json={"name": "Annie"}, headers=pin_headers())
        assert "Annie" in [p["name"] for p in client.get("/api/stats").json["players"]]
    finally:
        app.extensions["companion"].close()
