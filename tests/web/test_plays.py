"""Finished games for BG Stats and spreadsheets: the "Add to BG Stats" link
on the history pages, the whole history as BG Stats JSON Lines and as CSV
(web and ``companion export --format``), each read back by the independent
reader of :mod:`bgstats_reader` and compared with the table's own result."""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import subprocess
from datetime import datetime, timezone

import pytest

from bgstats_reader import Invalid, read_csv, read_jsonl, read_link, read_play
from companion.store import dump_action
from companion.timeline import Timeline
from test_history_web import Table
from web_support import pin_headers

START = 1_800_000_000            # 2027-01-15 08:00:00 UTC
TICK = 45                        # seconds between two store writes: games last minutes
LINK = re.compile(r'href="(https://app\.bgstatsapp\.com/createPlay\.html\?data=[^"]+)"')
NAMES = ["Éloïse", "Marc-Antoine", "Zoë", "Łukasz"]


# -- five finished games, played as the rules say -------------------------------------------

def _log(first: dict, play) -> list[dict]:
    tl = Timeline()
    tl.apply(first)
    play(tl)
    assert tl.public()["finished"], first["game"]
    return [first, *tl.log[1:]]


def third_man_match() -> list[dict]:
    def rounds(tl):
        while not tl.public()["finished"]:
            lead = tl.public()["lead"]
            for mine, pair, low in ((8, 9, 0), (7, 8, 1)):       # the lead takes the round at +30
                cards = [0] * 4
                cards[lead], cards[(lead + 1) % 4], cards[(lead + 2) % 4], cards[(lead + 3) % 4] = mine, pair, pair, low
                for k in range(4):
                    seat = (lead + k) % 4
                    tl.apply({"type": "bid", "seat": seat, "card": cards[seat]})
    return _log({"type": "new_game", "game": "third-man", "players": NAMES,
                 "options": {"tokens_to_win": 2, "first_lead": 1}}, rounds)


def diabolo_shared_win() -> list[dict]:
    def rounds(tl):
        tl.apply({"type": "score", "color": "blue", "hands": [9, 0, 0], "heaven": 5, "hell": 0})
        tl.apply({"type": "score", "color": "red", "hands": [0, 9, 0], "heaven": 5, "hell": 0})
        while not tl.public()["finished"]:
            color = next(c for c in ("blue", "red", "green", "yellow", "purple") if c not in tl.public()["scored"])
            tl.apply({"type": "score", "color": color, "hands": [0, 0, 0], "heaven": 3, "hell": 3})
    return _log({"type": "new_game", "game": "diabolo", "players": NAMES[:3]}, rounds)


def scoreboard_game() -> list[dict]:
    def entries(tl):
        tl.apply({"type": "add", "seat": 0, "points": 7})
        tl.apply({"type": "secret", "seat": 1, "value": 987654})     # never revealed: the game ends first
        tl.apply({"type": "add", "seat": 2, "points": 12})
    return _log({"type": "new_game", "game": "scoreboard", "players": ["Chloé", "=1+1", "Zoë"],
                 "options": {"target": 10}}, entries)


def fight_game() -> list[dict]:
    def turns(tl):
        for seat in (0, 1, 0):
            tl.apply({"type": "turn", "seat": seat, "play": 1, "take": []})
    return _log({"type": "new_game", "game": "fight", "players": NAMES[:2], "options": {"coins": {"1": 2}}},
                turns)


def sloppy_seconds_game() -> list[dict]:
    simple = {"type": "hand", "points": [dict(zip("SHDC", row)) for row in
                                         ((0, 0, 0, 0), (48, 48, 48, 48), (0, 0, 0, 0), (43, 43, 43, 43))]}
    def hands(tl):
        while not tl.public()["finished"]:
            tl.apply(simple)
    return _log({"type": "new_game", "game": "sloppy-seconds", "players": NAMES, "options": {"target": 300}},
                hands)


GAMES = {"third-man": third_man_match, "diabolo": diabolo_shared_win, "scoreboard": scoreboard_game,
         "fight": fight_game, "sloppy-seconds": sloppy_seconds_game}


@pytest.fixture
def table(tmp_path):
    ticks = itertools.count(START, TICK)
    t = Table(tmp_path / "data", clock=lambda: float(next(ticks)))
    yield t
    t.close()


def play_all(table) -> dict[str, int]:
    ids = {}
    for game, make in GAMES.items():
        ids[game] = table.play(*make())
    return ids


def own_result(table, game_id) -> dict:
    """The table's own result, as its history shows it (not the exporter)."""
    detail = table.client.get(f"/api/history/{game_id}").json
    state, record = detail["state"], detail["record"]
    measure = state["tokens"] if state["game"] == "third-man" else state["scores"]
    return {"players": record["players"], "winners": [record["players"][s] for s in state["winner"]],
            "scores": measure, "started": record["started"], "updated": record["updated"]}


def page_link(table, path: str) -> list[str]:
    return [html.unescape(u) for u in LINK.findall(table.client.get(path).get_data(as_text=True))]


def agree(play, result, title=None):
    assert play.players == result["players"]
    assert play.winners == result["winners"]
    assert play.scores == result["scores"]
    for name, rank in zip(play.players, play.ranks):
        assert (rank == 1) == (name in result["winners"])
    assert play.date == datetime.fromtimestamp(result["started"], timezone.utc)
    assert play.minutes == int(result["updated"] - result["started"]) // 60
    if title:
        assert play.game == title


# -- the link ------------------------------------------------------------------------------

@pytest.mark.parametrize("game", list(GAMES))
def test_a_finished_games_page_links_to_bg_stats_with_the_tables_result(table, game):
    gid = table.play(*GAMES[game]())
    links = page_link(table, f"/history/{gid}")
    assert len(links) == 1
    play = read_link(links[0])
    agree(play, own_result(table, gid))
    assert play.location == "companion"              # the table's name (setting "name")
    assert play.bgg is None                          # no BoardGameGeek id found for these games
    assert page_link(table, "/history") == links     # the list offers the same link


def test_a_shared_win_has_every_winner_first(table):
    gid = table.play(*diabolo_shared_win())
    play = read_link(page_link(table, f"/history/{gid}")[0])
    assert play.winners == ["Éloïse", "Marc-Antoine"] and play.ranks == [1, 1, 3]


def test_the_start_player_is_the_seat_the_game_names_first(table):
    ids = play_all(table)
    starts = {g: read_link(page_link(table, f"/history/{gid}")[0]).start for g, gid in ids.items()}
    assert starts["third-man"] == ["Marc-Antoine"]           # first_lead 1
    assert starts["fight"] == ["Éloïse"]                     # first 0 by default
    assert starts["sloppy-seconds"] == ["Marc-Antoine"]      # the seat after the first dealer leads
    assert starts["scoreboard"] == []                        # a scoreboard names nobody


def test_fight_ranks_by_the_order_players_went_out(table):
    gid = table.play(*fight_game())
    play = read_link(page_link(table, f"/history/{gid}")[0])
    assert play.ranks == [2, 1] and play.winners == ["Marc-Antoine"]      # Éloïse ran out first


def test_player_ids_follow_the_roster_through_a_rename(table):
    gid = table.play(*fight_game())
    before = read_link(page_link(table, f"/history/{gid}")[0])
    roster = table.client.get("/api/players").json
    pid = next(p["id"] for p in roster["players"] if p["name"] == "Éloïse")
    r = table.client.post(f"/api/players/{pid}/rename", json={"name": "Éloïse B."}, headers=pin_headers())
    assert r.status_code == 200, r.json
    after = read_link(page_link(table, f"/history/{gid}")[0])
    assert after.players[0] == "Éloïse B." and after.player_ids == before.player_ids


def test_an_unfinished_game_has_no_link(table):
    table.play({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]},
               {"type": "add", "seat": 0, "points": 3})
    assert page_link(table, "/history/1") == [] and page_link(table, "/history") == []


def test_a_play_too_long_for_a_link_is_said_not_cut(table, monkeypatch):
    from companion import plays
    gid = table.play(*sloppy_seconds_game())
    monkeypatch.setattr(plays, "MAX_LINK", 200)
    text = table.client.get(f"/history/{gid}").get_data(as_text=True)
    assert "createPlay" not in text and "too long for a BG Stats link" in text
    assert "too long for a BG Stats link" in table.client.get("/history").get_data(as_text=True)


def test_an_imported_game_has_no_duration(table):
    lines = "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in fight_game()).encode()
    r = table.client.post("/api/history/import", data=lines, headers=pin_headers(),
                          content_type="application/x-ndjson")
    assert r.status_code == 200, r.json
    play = read_link(page_link(table, f"/history/{r.json['id']}")[0])
    assert play.minutes is None and play.winners == ["Marc-Antoine"]


# -- the files -------------------------------------------------------------------------------

def test_the_whole_history_as_bg_stats_lines_and_csv_rows_agrees_with_the_table(table):
    ids = play_all(table)
    table.play({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})   # unfinished: left out
    r = table.client.get("/api/history/plays.jsonl")
    assert r.status_code == 200 and r.headers["Content-Disposition"].startswith("attachment")
    found = read_jsonl(r.data)
    assert [p.source_id.split("-")[0] for p in found] == [str(i) for i in ids.values()]   # oldest first
    for play, gid in zip(found, ids.values()):
        agree(play, own_result(table, gid))
        assert play == read_link(page_link(table, f"/history/{gid}")[0])     # the same JSON as the link
    rows = read_csv(table.client.get("/api/history/plays.csv").data)
    assert list(rows) == [str(i) for i in ids.values()]
    for gid in ids.values():
        result = own_result(table, gid)
        mine = rows[str(gid)]
        assert [row["player"] for row in mine] == [n if not n.startswith("=") else "'" + n
                                                    for n in result["players"]]
        assert [row["seat"] for row in mine] == [str(s + 1) for s in range(len(result["players"]))]
        assert [int(row["score"]) for row in mine] == result["scores"]
        assert [row["player"].lstrip("'") for row in mine if row["winner"] == "1"] == result["winners"]
        assert {row["date (UTC)"] for row in mine} == {
            datetime.fromtimestamp(result["started"], timezone.utc).strftime("%Y-%m-%d %H:%M:%S")}


def test_a_secret_never_revealed_does_not_reach_the_files(table):
    table.play(*scoreboard_game())
    for path in ("/api/history/plays.jsonl", "/api/history/plays.csv", "/history/1", "/history"):
        assert b"987654" not in table.client.get(path).data


def test_the_files_take_a_range_of_days(table):
    play_all(table)
    day = datetime.fromtimestamp(START).date()          # the box's day
    assert len(read_jsonl(table.client.get(f"/api/history/plays.jsonl?from={day}&to={day}").data)) == 5
    assert read_jsonl(table.client.get(f"/api/history/plays.jsonl?to={day.replace(year=2026)}").data) == []
    assert read_csv(table.client.get(f"/api/history/plays.csv?from={day.replace(year=2028)}").data) == {}
    for bad in ("2027-13-01", "yesterday", "2027-1-1"):
        r = table.client.get(f"/api/history/plays.csv?from={bad}")
        assert r.status_code == 400 and "YYYY-MM-DD" in r.json["error"]


def test_the_csv_headers_follow_the_language_and_the_rows_do_not(table):
    table.play(*fight_game())
    english = table.client.get("/api/history/plays.csv").data
    french = table.client.get("/api/history/plays.csv", headers={"Accept-Language": "fr"}).data
    assert english.splitlines()[1:] == french.splitlines()[1:]
    assert french.splitlines()[0] != english.splitlines()[0]


def test_the_history_page_offers_both_files_without_script(table):
    text = table.client.get("/history").get_data(as_text=True)
    assert 'action="/api/history/plays.jsonl"' in text and 'formaction="/api/history/plays.csv"' in text


# -- the command line ---------------------------------------------------------------------------

def run(cmd, *args, env=None):
    return subprocess.run([*cmd, *args], capture_output=True,
                          env={**os.environ, "COMPANION_LANG": "en", **(env or {})}, timeout=120)


def test_companion_export_writes_the_same_files_in_any_time_zone(table, tmp_path, companion_cmd):
    ids = play_all(table)
    web = table.client.get("/api/history/plays.jsonl").data
    web_csv = table.client.get("/api/history/plays.csv").data
    data = str(tmp_path / "data")
    out = run(companion_cmd, "export", "--data", data, "--format", "bgstats", env={"TZ": "Pacific/Chatham"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == web                              # UTC dates: the box's zone changes nothing
    assert run(companion_cmd, "export", "--data", data, "--format", "csv").stdout == web_csv
    one = run(companion_cmd, "export", "--data", data, "--format", "bgstats", str(ids["diabolo"]))
    assert [p.winners for p in read_jsonl(one.stdout)] == [["Éloïse", "Marc-Antoine"]]
    log = run(companion_cmd, "export", "--data", data, str(ids["fight"]))          # the log export is as it was
    assert log.stdout.decode() == "".join(dump_action(a) + "\n" for a in fight_game())


def test_companion_export_refuses_clearly(table, tmp_path, companion_cmd):
    table.play({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    data = str(tmp_path / "data")
    for args, code, words in ((["--format", "csv", "--from", "2027-02-30"], 2, "YYYY-MM-DD"),
                              (["--format", "bgstats", "1"], 1, "not finished"),
                              (["--format", "bgstats", "7"], 1, "no stored game"),
                              ([], 2, "needs a game number"),
                              (["--format", "xml"], 2, "invalid choice")):
        out = run(companion_cmd, "export", "--data", data, *args)
        assert out.returncode == code and words in out.stderr.decode() and b"Traceback" not in out.stderr
        assert len(out.stderr.decode().strip().splitlines()) == 1


# -- the reader can fail ---------------------------------------------------------------------

@pytest.mark.parametrize("change", [
    lambda p: p.pop("playDate"),
    lambda p: p.update(playDate="2027-01-15T08:00:00Z"),
    lambda p: p["players"][0].pop("winner"),
    lambda p: p["players"][0].update(winner="yes"),
    lambda p: p["game"].update(bggId="123"),
    lambda p: p.update(duration=5),
])
def test_the_reader_refuses_what_bg_stats_does_not_describe(change):
    play = {"sourceName": "x", "playDate": "2027-01-15 08:00:00", "game": {"name": "g"},
            "players": [{"name": "a", "winner": True}]}
    read_play(json.loads(json.dumps(play)))
    change(play)
    with pytest.raises(Invalid):
        read_play(play)


# -- a free scoreboard game named by the table ---------------------------------------------

def named_scoreboard(**options) -> list[dict]:
    return [{"type": "new_game", "game": "scoreboard", "players": ["Chloé", "Zoë"],
             "options": {"target": 10, **options}},
            {"type": "add", "seat": 1, "points": 11}]


def test_a_scoreboard_game_named_at_its_start_is_that_game_in_bg_stats(table):
    with_id = table.play(*named_scoreboard(name="Carcassonne", bgg_id=822))
    by_name = table.play(*named_scoreboard(name="Les Aventuriers du Rail"))
    plain = table.play(*named_scoreboard())
    found = {gid: read_link(page_link(table, f"/history/{gid}")[0]) for gid in (with_id, by_name, plain)}
    assert (found[with_id].game, found[with_id].bgg) == ("Carcassonne", 822)
    assert (found[by_name].game, found[by_name].bgg) == ("Les Aventuriers du Rail", None)
    assert (found[plain].game, found[plain].bgg) == ("Scoreboard", None)
    raw = [json.loads(line) for line in table.client.get("/api/history/plays.jsonl").data.splitlines()]
    ids = [p["game"]["sourceGameId"] for p in raw]
    assert len(set(ids)) == 3, ids                  # each named game is a game of its own in BG Stats
    assert read_csv(table.client.get("/api/history/plays.csv").data)[str(with_id)][0]["game"] == "Carcassonne"


@pytest.mark.parametrize("options", [{"name": " "}, {"name": "a\u202eb"}, {"name": "x" * 61},
                                     {"bgg_id": 0}, {"bgg_id": "822"}, {"bgg_id": 1.5}])
def test_a_bad_name_or_id_is_refused_with_one_line(table, options):
    r = table.client.post("/api/actions", json=named_scoreboard(**options)[0], headers=pin_headers())
    assert r.status_code == 400 and "\n" not in r.json["error"]
    assert "name'" in r.json["error"] or "'bgg_id'" in r.json["error"], r.json


# -- every game, played at random to its end ----------------------------------------------------

@pytest.mark.parametrize("game", ["third-man", "costly-tricks", "fight", "yenta", "diabolo", "scoreboard"])
def test_every_game_finished_at_random_reads_back_as_its_result(game, tmp_path):
    import random

    from browser_pages import GAMES as SHAPES
    from companion import plays
    from companion.exports import import_log
    from companion.store import Store
    from test_fuzz_games import plausible

    n, options, _wanted, _enough = SHAPES[game]
    options = {"scoreboard": {"target": 60}, "third-man": {"tokens_to_win": 1}, "costly-tricks": {"hands_to_win": 1},
               "fight": {"coins": {"5": 1, "1": 2}}, "yenta": {"target": 30}}.get(game, options)
    n = 2 if game == "fight" else n
    store = Store(tmp_path / game)
    try:
        finished = 0
        for seed in range(3):
            rng = random.Random(seed)
            t = Timeline()
            t.apply({"type": "new_game", "game": game, "players": NAMES[:2] + [f"P{i}" for i in range(n - 2)],
                     "options": options})
            for _ in range(2000):
                if t.public()["finished"]:
                    break
                action = plausible(game, t, rng)
                if action.get("type") in ("undo", "new_game"):
                    continue
                try:
                    t.apply(action)
                except Exception:
                    pass
            if t.public()["finished"]:
                finished += 1
                import_log(store, [dump_action(a) for a in t.log])
        facts = plays.store_facts(store, "Café des Jeux")
        assert len(facts) == finished
        for fact in facts:
            play = read_link(plays.link(plays.play(fact)))
            record = store.game(fact.id)
            assert play.winners == [record.players[s] for s in record.winner]
            assert play.location == "Café des Jeux" and play.minutes is None      # imported: no times
            assert all((r == 1) == (p in play.winners) for p, r in zip(play.players, play.ranks))
    finally:
        store.close()
    if not finished:
        pytest.skip(f"no random {game} game reached its end")
