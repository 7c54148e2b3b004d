"""The table's players (companion/roster.py, web/roster.py): the roster in
the store and its migration, names typed on a phone, the box's player
picker, renames and merges that the history and statistics follow, and a
new table's first evening from end to end."""

from __future__ import annotations

import itertools
import json
import sqlite3
import unicodedata

import pytest

from box_support import counting_box, mock_factory, press_all, shows  # noqa: F401 (fixture)
from companion.errors import IllegalActionError, InvalidActionError
from companion.roster import NoSuchPlayer, Roster, clean_name
from companion.session import TableSession
from companion.stats import player_stats, results_of_store
from companion.store import Store
from companion.timeline import replay
from web_support import PIN, http, make_app, pin_headers, running_server


def ticking(start=1000.0):
    """A clock a second further on at every call: the order of events is plain."""
    counter = itertools.count()
    return lambda: start + next(counter)


def scoreboard(players, **options):
    action = {"type": "new_game", "game": "scoreboard", "players": list(players)}
    if options:
        action["options"] = options
    return action


@pytest.fixture
def table(tmp_path):
    store = Store(tmp_path, clock=ticking())
    yield TableSession(store)
    store.close()


# -- the store ---------------------------------------------------------------------

OLD_SCHEMA = """
CREATE TABLE games (id INTEGER PRIMARY KEY, game TEXT NOT NULL, players TEXT NOT NULL,
    started REAL NOT NULL, updated REAL NOT NULL, finished INTEGER NOT NULL DEFAULT 0, winner TEXT);
CREATE TABLE actions (game_id INTEGER NOT NULL REFERENCES games(id), seq INTEGER NOT NULL,
    line TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (game_id, seq));
"""


def old_store(folder, games):
    """A store as the companion wrote it before the roster (schema version 0)."""
    folder.mkdir(exist_ok=True)
    db = sqlite3.connect(folder / "companion.db")
    db.executescript(OLD_SCHEMA)
    for gid, (players, started) in enumerate(games, start=1):
        first = json.dumps(scoreboard(players), ensure_ascii=False)
        db.execute("INSERT INTO games VALUES (?,?,?,?,?,0,NULL)",
                   (gid, "scoreboard", json.dumps(players, ensure_ascii=False), started, started))
        db.execute("INSERT INTO actions VALUES (?,?,?,?)", (gid, 1, first, started))
    db.commit()
    db.close()


def test_an_old_store_passes_through_the_migration_and_its_names_become_the_roster(tmp_path):
    old_store(tmp_path, [(["Ann", "Ben"], 10.0), (["ben", "Chloé"], 20.0)])
    before = (tmp_path / "companion.db").read_bytes()
    store = Store(tmp_path)
    assert not store.warnings, "a migration is not damage"
    assert [(p.name, p.games) for p in store.roster()] == [("Ann", 1), ("Ben", 2), ("Chloé", 1)]
    assert store.seat_players() == {1: [1, 2], 2: [2, 3]}      # "ben" is Ben: names compare case-folded
    assert store.lines(2) == [json.dumps(scoreboard(["ben", "Chloé"]), ensure_ascii=False)]   # logs untouched
    store.close()
    again = Store(tmp_path)                          # a second start changes nothing more
    assert [p.name for p in again.roster()] == ["Ann", "Ben", "Chloé"]
    again.close()
    assert before != (tmp_path / "companion.db").read_bytes()


def test_every_new_or_imported_game_links_its_seats_to_the_roster(table):
    table.submit(scoreboard(["Ann", "Zoe\u0308"]))             # a decomposed ë: the roster keeps it NFC
    gid = table.import_log([json.dumps(scoreboard(["zoë", "Łukasz"]))])
    store = table.store
    ids = {p.name: p.id for p in store.roster()}
    assert list(ids) == ["Ann", "Zoë", "Łukasz"]
    assert store.seat_players()[table.game_id] == [ids["Ann"], ids["Zoë"]]
    assert store.seat_players()[gid] == [ids["Zoë"], ids["Łukasz"]]


def test_the_roster_is_durable_and_survives_a_damaged_file(tmp_path):
    store = Store(tmp_path)
    session = TableSession(store)
    roster = Roster(session)
    ann = roster.add("Ann")
    session.submit(scoreboard(["Ann", "Ben"]))
    roster.rename(ann.id, "Annie")
    store.close()
    reopened = Store(tmp_path)
    assert [p.name for p in reopened.roster()] == ["Annie", "Ben"]
    # A scribbled schema (the roster table's columns gone) is damage: the
    # readable rows, the roster's included, are kept in a fresh file.
    reopened.db.execute("PRAGMA writable_schema=ON")
    reopened.db.execute("UPDATE sqlite_schema SET sql=replace(sql, 'added    REAL', 'addd REAL') WHERE name='roster'")
    reopened.db.execute("PRAGMA writable_schema=OFF")
    reopened.close()
    recovered = Store(tmp_path)
    assert recovered.warnings
    assert [p.name for p in recovered.roster()] == ["Annie", "Ben"]
    assert recovered.seat_players() == {1: [1, 2]}
    recovered.close()


# -- the roster -----------------------------------------------------------------------

def test_names_are_cleaned_and_checked():
    assert clean_name("  Zoe\u0308 ") == "Zoë" == unicodedata.normalize("NFC", "Zoë")
    for bad in ("", "   ", "x" * 25, "Ann\u202e", "A\x1b[2J", 7, None):
        with pytest.raises(InvalidActionError):
            clean_name(bad)


def test_add_rename_merge_and_their_refusals(table):
    roster = Roster(table)
    zoe = roster.add("Zoë")
    with pytest.raises(IllegalActionError, match="already on the roster"):
        roster.add("ZOË")
    ann = roster.add("Ann")
    with pytest.raises(IllegalActionError, match="merge the two players"):
        roster.rename(ann.id, "zoë")
    assert roster.rename(ann.id, "ANN").name == "ANN"        # a new spelling of one's own name is fine
    with pytest.raises(NoSuchPlayer):
        roster.rename(99, "Bob")
    with pytest.raises(IllegalActionError):
        roster.merge(ann.id, ann.id)
    with pytest.raises(NoSuchPlayer):
        roster.merge(ann.id, 99)
    assert roster.merge(ann.id, zoe.id).id == zoe.id
    assert roster.names() == ["Zoë"]


def test_the_settings_names_only_seed_an_empty_roster(table):
    roster = Roster(table)
    assert roster.seed(["Ann", "ann", "Ben\u202e", "Chloé"]) == 2      # a refused name and a repeat are skipped
    assert roster.names() == ["Ann", "Chloé"]
    assert roster.seed(["Dan"]) == 0
    assert roster.names() == ["Ann", "Chloé"]


def test_the_box_order_last_game_first_then_names_typed_since_then_the_rest(table):
    roster = Roster(table)
    roster.seed(["Ann", "Ben", "Chloé"])
    roster.add("Xavier")
    roster.add("Yann")
    assert roster.names() == ["Xavier", "Yann", "Ann", "Ben", "Chloé"]   # typed, in typed order, before seeds
    table.submit(scoreboard(["Chloé", "Yann"]))
    table.submit(scoreboard(["Ben", "Xavier"]))
    roster.add("Zoë")
    # The game at the table in seat order; the name typed since; then by last game.
    assert roster.names() == ["Ben", "Xavier", "Zoë", "Chloé", "Yann", "Ann"]
    assert roster.last_names() == ["Ben", "Xavier"]


def test_statistics_follow_a_rename_and_a_merge(table):
    roster = Roster(table)
    table.submit(scoreboard(["Ann", "Ben"], target=5))
    table.submit({"type": "add", "seat": 0, "points": 5})
    table.submit(scoreboard(["Annie", "Ben"], target=5))         # Ann typed anew as "Annie"
    table.submit({"type": "add", "seat": 0, "points": 5})
    ids = {p.name: p.id for p in roster.players()}
    names = {p.id: p.name for p in roster.players()}
    by_name = {p["name"]: p for p in player_stats(results_of_store(table.store), names)}
    assert by_name["Ann"]["won"] == by_name["Annie"]["won"] == 1
    roster.merge(ids["Annie"], ids["Ann"])
    roster.rename(ids["Ann"], "Anne-Marie")
    names = {p.id: p.name for p in roster.players()}
    stats = player_stats(results_of_store(table.store), names)
    assert [(p["name"], p["played"], p["won"], p["streak"]) for p in stats] == [
        ("Anne-Marie", 2, 2, 2), ("Ben", 2, 0, 0)]
    assert stats[0]["id"] == ids["Ann"]


def test_a_player_merged_into_a_seat_mate_played_that_game_once(table):
    roster = Roster(table)
    table.submit(scoreboard(["Zoe", "Zoë"], target=3))
    table.submit({"type": "add", "seat": 1, "points": 3})
    ids = {p.name: p.id for p in roster.players()}
    roster.merge(ids["Zoe"], ids["Zoë"])
    names = {p.id: p.name for p in roster.players()}
    [zoe] = player_stats(results_of_store(table.store), names)
    assert (zoe["name"], zoe["played"], zoe["won"]) == ("Zoë", 1, 1)


# -- the web ------------------------------------------------------------------------

@pytest.fixture
def client(table):
    app = make_app(table, names=["Ann", "Ben"])
    yield app.test_client()
    app.extensions["companion"].close()


def test_the_api_lists_adds_renames_and_merges_with_the_pin(client):
    assert [p["name"] for p in client.get("/api/players").json["players"]] == ["Ann", "Ben"]   # seeded
    answer = client.post("/api/players", json={"name": " Zoë "}, headers=pin_headers())
    assert answer.status_code == 201
    zoe = answer.json["player"]
    assert zoe["name"] == "Zoë" and zoe["games"] == 0
    assert [p["name"] for p in answer.json["players"]] == ["Zoë", "Ann", "Ben"]
    renamed = client.post(f"/api/players/{zoe['id']}/rename", json={"name": "Zoé"}, headers=pin_headers())
    assert renamed.status_code == 200 and renamed.json["player"]["name"] == "Zoé"
    merged = client.post(f"/api/players/{zoe['id']}/merge", json={"into": 1}, headers=pin_headers())
    assert merged.status_code == 200 and merged.json["player"] == {"id": 1, "name": "Ann", "games": 0, "last": None}
    assert [p["name"] for p in client.get("/api/players").json["players"]] == ["Ann", "Ben"]


@pytest.mark.parametrize("path, body, status, words", [
    ("/api/players", {"name": "Ann\u202eX"}, 400, "U+202E"),
    ("/api/players", {"name": "A\u0007"}, 400, "U+0007"),
    ("/api/players", {"name": ""}, 400, "empty"),
    ("/api/players", {"name": "x" * 30}, 400, "longer than 24"),
    ("/api/players", {"name": 5}, 400, "text"),
    ("/api/players", {"nom": "Ann"}, 400, "'name'"),
    ("/api/players", ["Ann"], 400, "'name'"),
    ("/api/players", {"name": "ann"}, 409, "already on the roster"),
    ("/api/players/2/rename", {"name": "ANN"}, 409, "merge"),
    ("/api/players/9/rename", {"name": "Bob"}, 404, "no player 9"),
    ("/api/players/9/merge", {"into": 1}, 404, "no player 9"),
    ("/api/players/1/merge", {"into": 9}, 404, "no player 9"),
    ("/api/players/1/merge", {"into": "2"}, 400, "'into'"),
    ("/api/players/1/merge", {"into": 1}, 409, "themselves"),
])
def test_refusals_are_clear_and_change_nothing(client, path, body, status, words):
    before = client.get("/api/players").json
    answer = client.post(path, json=body, headers=pin_headers())
    assert answer.status_code == status, answer.json
    assert words in answer.json["error"]
    assert client.get("/api/players").json == before


def test_writes_need_the_right_pin_and_reads_do_not(client):
    assert client.post("/api/players", json={"name": "Zoë"}).status_code == 401
    assert client.post("/api/players", json={"name": "Zoë"}, headers=pin_headers("0000")).status_code == 403
    assert client.post("/api/players/1/rename", json={"name": "Zoë"}).status_code == 401
    assert client.post("/api/players/1/merge", json={"into": 2}).status_code == 401
    assert client.get("/api/players").status_code == 200
    assert "Zoë" not in client.get("/api/players").get_data(as_text=True)


def test_the_errors_speak_french(client):
    answer = client.post("/api/players?lang=fr", json={"name": "ann"}, headers=pin_headers())
    assert answer.status_code == 409 and "Ann" in answer.json["error"]
    assert "roster" not in answer.json["error"]


def test_the_control_page_has_a_labelled_roster_form_and_its_script(client):
    page = client.get("/control").get_data(as_text=True)
    assert '<label for="roster-name">' in page and 'id="roster-name"' in page
    assert "/static/roster.js" in page
    french = client.get("/control?lang=fr").get_data(as_text=True)
    texts = json.loads(french.split('id="roster-texts">', 1)[1].split("</script>", 1)[0])
    assert texts["Rename"] != "Rename" and texts["Merge into…"] != "Merge into…"


def test_a_new_game_form_on_a_phone_offers_the_roster(client):
    assert client.get("/api/games").json["names"] == ["Ann", "Ben"]        # the settings' names seed a new box
    client.post("/api/players", json={"name": "Zoë"}, headers=pin_headers())
    # The table's own names, and no more the settings' demo names (issue 19); they stay on the roster.
    assert client.get("/api/games").json["names"] == ["Zoë"]
    assert {p["name"] for p in client.get("/api/players").json["players"]} == {"Zoë", "Ann", "Ben"}


# -- the box -------------------------------------------------------------------------

def shows_in_reach(box, *words, rows: int = 4) -> None:
    """Every one of ``words`` is drawn on this screen or a scroll away: the
    panel shows three rows of a list, so the cursor goes ``rows`` down and
    back up again, and every frame on the way counts."""
    drawn = list(box.frame.texts)
    for key in ["down"] * rows + ["up"] * rows:
        box.press(key)
        drawn += box.frame.texts
    text = " | ".join(drawn)
    missing = [w for w in words if w not in text]
    assert not missing, f"no frame within {rows} rows shows {missing}: {text}"


def test_the_box_picker_offers_the_roster_and_the_last_game_first(table, mock_factory):
    Roster(table).seed(["Ann", "Ben", "Chloé", "Dan", "Élodie"])
    table.submit(scoreboard(["Dan", "Chloé"]))
    box = counting_box(table, mock_factory, bounce_ms=1)
    try:
        for key in ("back", "down", "ok", "ok"):                # menu, New game, Scoreboard (the current)
            box.press(key)
        shows(box, "Start", "1. Dan")
        shows_in_reach(box, "Start", "1. Dan", "2. Chloé")
        for key in ("down", "down", "ok"):                      # Players, seat 1
            box.press(key)
        shows(box, "Seat 1", "Dan")
        shows_in_reach(box, "Seat 1", "Dan", "Ann", "Ben", "Élodie")
        assert "Chloé" not in box.frame.texts
    finally:
        box.close()


# -- a new table's first evening ---------------------------------------------------------

FIRST_EVENING = ["Aïcha", "Bartholomew", "Ståle", "Dörte", "Ñoño"]


def test_a_new_table_plays_under_names_typed_on_a_phone_and_finds_them_again(tmp_path, mock_factory):
    """Done means: the names typed on a phone are the box's list, the game
    played under them is in the statistics, the next game offers them
    first, and a rename shows in the history and the statistics."""
    store = Store(tmp_path)
    session = TableSession(store)
    box = counting_box(session, mock_factory, bounce_ms=1)
    app = make_app(session, box=box, names=["Ann", "Ben", "Chloé", "Dan"])
    try:
        with running_server(app) as server:
            port = server.port
            # The phone: the table types its names once.
            for name in FIRST_EVENING:
                status, _h, body = http(port, "POST", "/api/players", {"name": name}, pin_headers())
                assert status == 201, body
            listed = [p["name"] for p in http(port, "GET", "/api/players")[2]["players"]]
            assert listed == FIRST_EVENING + ["Ann", "Ben", "Chloé", "Dan"]

            # The box: a new scoreboard game; its seats are the typed names;
            # seat 1 is then changed to the fifth through the picker.
            for key in ("ok", "ok", "up", "ok"):                # idle → menu → New game → Scoreboard
                box.press(key)
            shows(box, "Start", "1. Aïcha")
            shows_in_reach(box, "Start", "1. Aïcha", "2. Bartholomew", "3. Ståle", "4. Dörte", rows=5)
            press_all(box, ["down"] * 2 + ["ok"])               # seat 1's picker
            shows(box, "Seat 1", "Aïcha")
            shows_in_reach(box, "Seat 1", "Aïcha", "Ñoño", "Ann")
            for key in ("down", "ok", "up", "up", "ok"):        # Ñoño; up to Start
                box.press(key)
            assert session.public()["players"] == ["Ñoño", "Bartholomew", "Ståle", "Dörte"]
            game = session.game_id

            # The game is played (scores from a phone), then the table starts
            # the next one: the box's list has them first, in their seats.
            for seat, points in [(0, 5), (1, 12), (2, -3), (3, 7)]:
                status, _h, body = http(port, "POST", "/api/actions",
                                        {"type": "add", "seat": seat, "points": points}, pin_headers())
                assert status == 200, body
            for key in ("back", "down", "ok", "ok"):            # menu, New game, Scoreboard (the current)
                box.press(key)
            shows_in_reach(box, "1. Ñoño", "2. Bartholomew", "3. Ståle", "4. Dörte", rows=5)
            press_all(box, ["down"] * 3 + ["ok"])               # seat 2's picker
            shows(box, "Seat 2", "Bartholomew")
            shows_in_reach(box, "Seat 2", "Bartholomew", "Aïcha", "Ann")
            box.press("back")
            box.press("back")
            box.press("back")
            names = http(port, "GET", "/api/games")[2]["names"]
            assert names[:5] == ["Ñoño", "Bartholomew", "Ståle", "Dörte", "Aïcha"]

            # A finished game started from the phone with the roster's names.
            status, _h, body = http(port, "POST", "/api/actions",
                                    scoreboard(names[1:4], target=10), pin_headers())
            assert status == 200, body
            http(port, "POST", "/api/actions", {"type": "add", "seat": 1, "points": 10}, pin_headers())
            stats = {p["name"]: p for p in http(port, "GET", "/api/stats")[2]["players"]}
            assert stats["Ståle"]["won"] == 1 and stats["Ståle"]["played"] == 1
            assert stats["Ñoño"]["unfinished"] == 1
            assert not {"Ann", "Ben"} & set(stats)          # seeds that never played are no statistics

            # A rename: the history and the statistics say the new name; the
            # stored log keeps the name the game was played under.
            ids = {p["name"]: p["id"] for p in http(port, "GET", "/api/players")[2]["players"]}
            status, _h, body = http(port, "POST", f"/api/players/{ids['Ståle']}/rename",
                                    {"name": "Ståle Ø."}, pin_headers())
            assert status == 200, body
            history = http(port, "GET", "/api/history")[2]["games"]
            first = next(g for g in history if g["id"] == game)
            assert first["players"] == ["Ñoño", "Bartholomew", "Ståle Ø.", "Dörte"]
            assert first["log_players"] == ["Ñoño", "Bartholomew", "Ståle", "Dörte"]
            mine = http(port, "GET", "/api/history?player=" + "St%C3%A5le%20%C3%98.")[2]["games"]
            assert {g["id"] for g in mine} == {game, session.game_id}
            stats = {p["name"]: p for p in http(port, "GET", "/api/stats")[2]["players"]}
            assert "Ståle" not in stats and stats["Ståle Ø."]["won"] == 1
            page = http(port, "GET", "/stats")[2].decode()
            assert "Ståle Ø." in page
            page = http(port, "GET", "/history")[2].decode()
            assert "Ståle Ø." in page
            assert replay(store.lines(game)).public()["players"] == ["Ñoño", "Bartholomew", "Ståle", "Dörte"]
    finally:
        app.extensions["companion"].close()
        box.close()
        store.close()
