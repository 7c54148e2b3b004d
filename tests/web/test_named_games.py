"""A scoreboard game the table named at its start ("Carcassonne") is called
by that name wherever a person reads about it: the scoreboard, History (the
list and its page) and Statistics, where it counts under its name, not as
"Scoreboard" (docs/api.md, "History, statistics, export and import").  And a
History row shows each seat's points, with the tokens where the game uses
them: a 12–0 win reads "12 ✓ · 0", not "0 ● ✓ · 0 ●"."""

from __future__ import annotations

import re

import pytest

from companion.history import game_name
from companion.stats import Result, game_titles, player_stats
from test_history_web import Table, add, scoreboard


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path / "data")
    yield t
    t.close()


PLAYERS = ("Marc-Antoine", "Éloïse")


def carcassonne(table, name="Carcassonne", points=12):
    return table.play(scoreboard(PLAYERS, name=name, target=10), add(0, points))


def test_a_game_is_named_by_its_first_line():
    assert game_name('{"type": "new_game", "game": "scoreboard", "players": ["A"], "options": {"name": " Azul "}}') == "Azul"
    assert game_name({"type": "new_game", "game": "scoreboard", "players": ["A"]}) is None
    assert game_name({"type": "new_game", "game": "yenta", "players": ["A"], "options": {"name": "x"}}) is None
    assert game_name("not a line") is None


def test_the_scoreboard_page_says_the_games_name(table):
    carcassonne(table)
    html = table.client.get("/").get_data(as_text=True)
    assert re.search(r"<title>Carcassonne · ", html), html[:400]
    assert '<h1 class="game-title">Carcassonne</h1>' in html
    boot = table.client.get("/seat").get_data(as_text=True)
    assert '"game_name": "Carcassonne"' in boot or '"game_name":"Carcassonne"' in boot


def test_history_lists_and_opens_the_game_by_its_name(table):
    gid = carcassonne(table)
    entry = table.client.get("/api/history").json["games"][0]
    assert entry["name"] == "Carcassonne" and entry["title"] == "Scoreboard"
    detail = table.client.get(f"/api/history/{gid}").json
    assert detail["record"]["name"] == "Carcassonne"
    page = table.client.get(f"/history/{gid}").get_data(as_text=True)
    assert "<title>Carcassonne · game" in page and "<h1>Carcassonne <small>Scoreboard · game" in page
    listing = table.client.get("/history").get_data(as_text=True)
    assert f'href="/history/{gid}">Carcassonne</a>' in listing
    unnamed = table.play(scoreboard(PLAYERS, target=5), add(1, 5))
    assert table.client.get(f"/api/history/{unnamed}").json["record"]["name"] is None


def seat_results(html: str) -> list[str]:
    """Each History row's seats as a person reads them ("Marc-Antoine 12 ✓")."""
    rows = re.findall(r'<span class="player-result[^"]*">(.*?)</span>(?: · |\s*$)', html, flags=re.S | re.M)
    return [re.sub(r"[ \t\n]+", " ", re.sub(r"<[^>]+>", " ", r)).strip() for r in rows]


def test_a_history_row_shows_points_and_the_tokens_a_game_uses(table):
    carcassonne(table)                                              # 12-0, no token
    table.play(scoreboard(PLAYERS), add(0, 5), {"type": "token", "seat": 1, "delta": 2})
    rows = seat_results(table.client.get("/history").get_data(as_text=True))
    # newest first: the game with tokens, then Carcassonne
    assert rows[:2] == ["Marc-Antoine 5 (0\u00a0●)", "Éloïse 0 (2\u00a0●)"], rows
    assert rows[2:4] == ["Marc-Antoine 12 ✓", "Éloïse 0"], rows


def test_the_third_man_row_counts_tokens_its_points_are_the_last_rounds(table):
    table.play({"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]})
    table.session.store.db.execute("UPDATE summaries SET folded=? WHERE game_id=?",
                                   ('{"scores": [7, -3, 0, 0], "tokens": [2, 0, 1, 0]}', table.session.game_id))
    rows = seat_results(table.client.get("/history").get_data(as_text=True))
    assert rows == ["Ann 2\u00a0●", "Ben 0\u00a0●", "Chloé 1\u00a0●", "Dan 0\u00a0●"], rows


def test_statistics_group_a_named_game_by_its_name(table):
    carcassonne(table, "Carcassonne")
    carcassonne(table, "carcassonne ", points=20)                  # the same game, spelt another way
    table.play(scoreboard(PLAYERS, name="Azul", target=3), add(1, 3))
    table.play(scoreboard(PLAYERS, target=3), add(1, 4))           # a scoreboard game without a name
    body = table.client.get("/api/stats").json
    assert body["titles"] == {"scoreboard": "Scoreboard", "scoreboard:azul": "Azul",
                              "scoreboard:carcassonne": "carcassonne"}, body["titles"]
    marc = next(p for p in body["players"] if p["name"] == "Marc-Antoine")
    assert marc["games"]["scoreboard:carcassonne"]["played"] == 2 and marc["games"]["scoreboard:carcassonne"]["won"] == 2
    assert marc["games"]["scoreboard:carcassonne"]["best"] == 20
    assert marc["games"]["scoreboard"]["played"] == 1 and marc["games"]["scoreboard:azul"]["won"] == 0
    html = table.client.get("/stats").get_data(as_text=True)
    assert re.findall(r"<h2>([^<]+)</h2>", html)[1:] == ["Scoreboard", "Azul", "carcassonne"]


def test_player_stats_count_under_a_results_key():
    results = [Result(1, "scoreboard", ("Ann", "Ben"), True, (0,), (5, 1), 1.0, name="Azul"),
               Result(2, "scoreboard", ("Ann", "Ben"), True, (1,), (0, 3), 2.0, name="AZUL"),
               Result(3, "scoreboard", ("Ann", "Ben"), True, (0,), (9, 1), 3.0)]
    [ann, ben] = sorted(player_stats(results), key=lambda p: p["name"])
    assert set(ann["games"]) == {"scoreboard", "scoreboard:azul"}
    assert ann["games"]["scoreboard:azul"] == {"played": 2, "won": 1, "average": 2.5, "best": 5, "streak": 1}
    assert game_titles(results) == {"scoreboard:azul": "AZUL"}
