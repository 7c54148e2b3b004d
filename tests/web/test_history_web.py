"""The table's history on the phones: the list, one game's step-through,
resuming, the pages, and above all that no history output shows a secret
the table has not seen revealed (docs/api.md, "History ...")."""

from __future__ import annotations

import itertools
import json
import unicodedata

import pytest

from companion.session import TableSession
from companion.store import Store
from companion.timeline import replay
from web_support import make_app, pin_headers

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}
LIST = "/api/history/games"     # the list; also GET /api/history (see test at the end)


def bid(seat, card):
    return {"type": "bid", "seat": seat, "card": card}


def scoreboard(players=("Ann", "Ben"), **options):
    action = {"type": "new_game", "game": "scoreboard", "players": list(players)}
    if options:
        action["options"] = options
    return action


def add(seat, points):
    return {"type": "add", "seat": seat, "points": points}


class Table:
    """A store with a clock that ticks a second per call, its session and app."""

    def __init__(self, path, clock=None):
        ticks = itertools.count(1_700_000_000)
        self.store = Store(path, clock=clock or (lambda: float(next(ticks))))
        self.session = TableSession(self.store)
        self.app = make_app(self.session)
        self.client = self.app.test_client()

    def play(self, *actions):
        for action in actions:
            r = self.client.post("/api/actions", json=action, headers=pin_headers())
            assert r.status_code == 200, r.json
        return self.session.game_id

    def close(self):
        self.app.extensions["companion"].close()
        self.store.close()


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path / "data")
    yield t
    t.close()


# -- the list ---------------------------------------------------------------------------

def test_the_list_is_newest_first_by_last_action(table):
    first = table.play(scoreboard())
    second = table.play(scoreboard(("Cat", "Dan")))
    table.session.resume(first)
    table.play(add(0, 3))                       # the first game moves to the top
    r = table.client.get(LIST)
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    assert [g["id"] for g in r.json["games"]] == [first, second]


def test_each_entry_says_title_players_scores_winner_and_whether_it_is_at_the_table(table):
    done = table.play(scoreboard(target=5), add(1, 6))
    now = table.play(THIRD_MAN)
    games = {g["id"]: g for g in table.client.get(LIST).json["games"]}
    assert games[done]["title"] == "Scoreboard"
    assert games[done]["finished"] is True and games[done]["winner"] == [1]
    assert games[done]["scores"] == [0, 6] and games[done]["current"] is False
    assert games[now]["current"] is True and games[now]["finished"] is False
    assert games[now]["tokens"] == [0, 0, 0, 0] and games[now]["players"] == THIRD_MAN["players"]
    assert games[now]["actions"] == 1


def test_filter_by_game(table):
    table.play(scoreboard())
    tm = table.play(THIRD_MAN)
    r = table.client.get(LIST, query_string={"game": "third-man"})
    assert [g["id"] for g in r.json["games"]] == [tm]
    assert table.client.get(LIST, query_string={"game": "yenta"}).json["games"] == []


def test_filter_by_player_ignores_case_and_unicode_form(table):
    with_chloe = table.play(THIRD_MAN)
    table.play(scoreboard(("Ann", "Ben")))
    decomposed = unicodedata.normalize("NFD", "CHLOÉ")
    r = table.client.get(LIST, query_string={"player": decomposed})
    assert [g["id"] for g in r.json["games"]] == [with_chloe]
    assert len(table.client.get(LIST, query_string={"player": "ann"}).json["games"]) == 2
    assert table.client.get(LIST, query_string={"player": "Chl"}).json["games"] == []   # whole names


def test_filters_combine(table):
    table.play(THIRD_MAN)
    sb = table.play(scoreboard(("Ann", "Ben")))
    table.play(scoreboard(("Cat", "Dan")))
    r = table.client.get(LIST, query_string={"game": "scoreboard", "player": "Ann"})
    assert [g["id"] for g in r.json["games"]] == [sb]


# -- one game ------------------------------------------------------------------------------

def test_one_game_has_its_record_final_state_and_every_step(table):
    gid = table.play(scoreboard(), add(0, 4), add(1, 2), {"type": "undo"})
    r = table.client.get(f"/api/history/{gid}")
    assert r.status_code == 200
    body = r.json
    assert body["record"]["id"] == gid and body["record"]["title"] == "Scoreboard"
    assert [s["n"] for s in body["steps"]] == [1, 2, 3, 4]
    assert [s["action"]["type"] for s in body["steps"]] == ["new_game", "add", "add", "undo"]
    assert [s["state"]["scores"] for s in body["steps"]] == [[0, 0], [4, 0], [4, 2], [4, 0]]
    assert body["state"] == replay(table.store.lines(gid)).public() == table.session.public()
    assert body["broken_at"] is None


def test_an_unknown_game_is_a_json_404(table):
    r = table.client.get("/api/history/42")
    assert r.status_code == 404 and "42" in r.json["error"]
    assert table.client.get("/history/42").status_code == 404
    assert table.client.get("/api/history/42/export.csv").status_code == 404


def test_a_stored_log_that_no_longer_replays_is_shown_up_to_its_bad_line(table):
    gid = table.play(scoreboard(), add(0, 4), add(1, 2))
    table.store.db.execute("UPDATE actions SET line=? WHERE game_id=? AND seq=3",
                           ('{"type": "add", "seat": 9, "points": 1}', gid))
    body = table.client.get(f"/api/history/{gid}").json
    assert body["broken_at"] == 3 and len(body["steps"]) == 2
    assert body["state"]["scores"] == [4, 0]


# -- secrecy --------------------------------------------------------------------------------

PUBLIC_ROUTES = ["/api/history", LIST, "/api/history/1", "/api/history/1/export.jsonl",
                 "/api/history/1/export.csv", "/api/stats", "/history", "/history/1", "/stats",
                 "/history?player=Chlo%C3%A9", "/history?game=third-man"]


def _outputs(tmp_path, name, actions):
    """Every history output of a table that played ``actions`` (a fixed
    clock: two runs differ only by what they were given)."""
    t = Table(tmp_path / name, clock=lambda: 1_700_000_000.0)
    try:
        t.play(*actions)
        return {route: (t.client.get(route).status_code, t.client.get(route).data) for route in PUBLIC_ROUTES}
    finally:
        t.close()


@pytest.mark.parametrize("hidden", [(3, 8), (8, 3), (0, 9)])
def test_a_third_man_bid_under_way_shows_no_secret_card_anywhere(tmp_path, hidden):
    # Ann leads with a 6 (public); Chloé and Ben have entered secret cards.
    a, b = hidden
    base = _outputs(tmp_path, "base", [THIRD_MAN, bid(0, 6), bid(2, 1), bid(1, 2)])
    other = _outputs(tmp_path, "other", [THIRD_MAN, bid(0, 6), bid(2, a), bid(1, b)])
    for route in PUBLIC_ROUTES:
        assert base[route][0] == 200, route
        assert other[route] == base[route], f"{route} depends on a secret card"


def test_the_step_through_of_a_bid_under_way_says_who_entered_never_what(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3))
    steps = table.client.get(f"/api/history/{gid}").json["steps"]
    assert steps[1]["action"] == bid(0, 6)                       # the lead's card is public
    assert steps[2]["action"] == {"type": "bid", "seat": 2, "card": None}
    assert steps[2]["state"]["pending"] == {"lead_card": 6, "entered": [0, 2]}
    assert steps[2]["state"]["hands"][2] == list(range(10))     # a secret card stays in hand until the reveal


def test_cards_appear_in_the_step_through_once_revealed(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3), bid(1, 8), bid(3, 1))
    steps = table.client.get(f"/api/history/{gid}").json["steps"]
    assert [s["action"] for s in steps[1:]] == [bid(0, 6), bid(2, 3), bid(1, 8), bid(3, 1)]
    assert steps[-1]["state"]["last"]["cards"] == [6, 8, 3, 1]


def test_a_secret_taken_back_before_the_reveal_is_gone_from_a_finished_game(table):
    gid = table.play(scoreboard(target=5), {"type": "secret", "seat": 0, "value": 77}, {"type": "undo"},
                     add(1, 5))
    assert table.store.game(gid).finished
    body = table.client.get(f"/api/history/{gid}").data
    public = table.client.get(f"/api/history/{gid}/export.jsonl").data
    assert b"77" not in body and b"77" not in public
    full = table.client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers()).data
    assert b"77" not in full and full.count(b"\n") == 2     # new_game and the add: the pair is gone


def test_the_pin_does_not_open_a_bid_under_way(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3))
    r = table.client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers())
    assert r.status_code == 409 and "pending" in r.json["error"]
    assert b'"card": 3' not in r.data
    table.session.submit(bid(1, 8))
    table.session.submit(bid(3, 1))
    r = table.client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers())
    assert r.status_code == 200 and b'"card": 3' in r.data


# -- resuming -----------------------------------------------------------------------------------

def test_resuming_needs_the_pin(table):
    gid = table.play(scoreboard())
    table.play(THIRD_MAN)
    assert table.client.post(f"/api/history/{gid}/resume").status_code == 401
    assert table.client.post(f"/api/history/{gid}/resume", headers={"X-Table-Pin": "0000"}).status_code == 403
    assert table.session.public()["game"] == "third-man"


def test_resuming_makes_the_game_the_one_at_the_table(table):
    gid = table.play(scoreboard(), add(0, 2))
    table.play(THIRD_MAN)
    r = table.client.post(f"/api/history/{gid}/resume", headers=pin_headers())
    assert r.status_code == 200
    assert r.json == table.client.get("/api/state").json
    assert r.json["game"] == "scoreboard" and r.json["scores"] == [2, 0]
    table.play(add(1, 5))                                 # and the game goes on
    assert table.store.lines(gid)[-1] == '{"type": "add", "seat": 1, "points": 5}'
    games = {g["id"]: g for g in table.client.get(LIST).json["games"]}
    assert games[gid]["current"] is True


def test_a_finished_or_unknown_game_cannot_be_resumed(table):
    done = table.play(scoreboard(target=1), add(0, 1))
    table.play(THIRD_MAN)
    r = table.client.post(f"/api/history/{done}/resume", headers=pin_headers())
    assert r.status_code == 409 and "finished" in r.json["error"]
    assert table.client.post("/api/history/99/resume", headers=pin_headers()).status_code == 404
    assert table.session.public()["game"] == "third-man"


def test_resuming_without_the_session_method_is_a_plain_501(table, monkeypatch):
    gid = table.play(scoreboard())
    table.play(THIRD_MAN)
    monkeypatch.setattr(TableSession, "resume", None)
    r = table.client.post(f"/api/history/{gid}/resume", headers=pin_headers())
    assert r.status_code == 501 and r.json == {"error": "resuming a game from the phone is not available yet"}


# -- the pages ------------------------------------------------------------------------------------

def test_the_history_page_lists_games_and_filters_without_a_script(table):
    table.play(scoreboard(("Zoë", "Łukasz"), target=3), add(1, 4))
    table.play(THIRD_MAN)
    page = table.client.get("/history").data.decode()
    assert "Zoë" in page and "Łukasz" in page and "The Third Man" in page and "Scoreboard" in page
    assert page.index('href="/history/2"') < page.index('href="/history/1"')     # newest first
    filtered = table.client.get("/history?player=zo%C3%AB").data.decode()
    assert 'href="/history/1"' in filtered and 'href="/history/2"' not in filtered


def test_player_names_are_text_on_the_pages_never_markup(table):
    table.play(scoreboard(("<b>Ann</b>", "Ben"), target=1), add(0, 1))
    for route in ("/history", "/history/1", "/stats"):
        page = table.client.get(route).data.decode()
        assert "<b>Ann</b>" not in page, route
        assert "&lt;b&gt;Ann&lt;/b&gt;" in page or "\\u003cb\\u003eAnn" in page, route


def test_the_game_page_carries_its_steps_for_the_step_through(table):
    gid = table.play(scoreboard(), add(0, 4))
    page = table.client.get(f"/history/{gid}").data.decode()
    boot = json.loads(page.split('<script type="application/json" id="boot">', 1)[1].split("</script>", 1)[0])
    assert boot["page"] == "history-game"
    assert boot["detail"] == table.client.get(f"/api/history/{gid}").json
    assert "Step {k} of {n}" in boot["texts"]
    assert "history.js" in page and f"/api/history/{gid}/export.csv" in page
    assert 'id="resume"' not in page            # the game at the table is not resumed


def test_an_unfinished_game_not_at_the_table_offers_resume(table):
    gid = table.play(scoreboard())
    table.play(THIRD_MAN)
    assert 'id="resume"' in table.client.get(f"/history/{gid}").data.decode()


def test_the_stats_page_shows_each_player(table):
    table.play(scoreboard(("Zoë", "Ben"), target=3), add(0, 4))
    page = table.client.get("/stats").data.decode()
    assert "Zoë" in page and "Ben" in page and "stats.js" in page
    assert table.client.get("/api/stats").json["players"][0]["name"] == "Zoë"


def test_the_stats_page_without_finished_games_says_so(table):
    table.play(THIRD_MAN)
    assert "No finished game yet" in table.client.get("/stats").data.decode()


def test_every_text_the_scripts_build_goes_to_the_catalogue():
    import re
    from pathlib import Path

    from web.history import JS_TEXTS

    static = Path(__file__).resolve().parents[2] / "web" / "static"
    used = set()
    for name in ("history.js", "stats.js"):
        used |= set(re.findall(r'\bt\("((?:[^"\\]|\\.)*)"', (static / name).read_text(encoding="utf-8")))
    assert used and used <= set(JS_TEXTS), sorted(used - set(JS_TEXTS))




def test_api_history_is_the_list_of_stored_games(table):
    table.play(scoreboard())
    assert table.client.get("/api/history").json == table.client.get(LIST).json


def test_resuming_another_game_ends_every_claim(table):
    """A seat token ends with its game (issue 13, finding 4): resuming is another game."""
    gid = table.play(scoreboard())                       # two seats
    table.play(THIRD_MAN)                                 # four seats
    table.session.update_table(lambda t: t.claims.update({3: "Dan's phone", 1: "Ben's phone"}))
    r = table.client.post(f"/api/history/{gid}/resume", headers=pin_headers())
    assert r.status_code == 200
    assert table.session.table.claims == {}
