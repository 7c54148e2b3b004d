"""The table control's entry panels, server side (Flask's test client):
the /control page carries a panel and its scripts for the games that have
one, every text the panels' scripts build goes through the catalogue, and
the two FIGHT? helper routes answer what the rules and the solver say.

(What the panels *do* in a browser is tests/browser/test_browser_entry.py.)"""

from __future__ import annotations

import itertools
import re
import threading
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from companion import fight_solver
from companion.games.fight import legal_changes
from web_support import FakeBox, make_app, pin_headers

STATIC = Path(__file__).resolve().parents[2] / "web" / "static"
ENTRY_SCRIPTS = sorted(STATIC.glob("entry*.js"))
ENTRY_GAMES = ["costly-tricks", "sloppy-seconds", "fight", "yenta", "diabolo", "scoreboard"]


@pytest.fixture
def table(session):
    app = make_app(session, mock=True, box=FakeBox())
    yield app.test_client(), session
    app.extensions["companion"].close()


def play(client, *actions):
    for action in actions:
        r = client.post("/api/actions", json=action, headers=pin_headers())
        assert r.status_code == 200, (action, r.json)
    return client.get("/api/state").json


def new_game(game, players, **options):
    action = {"type": "new_game", "game": game, "players": players}
    if options:
        action["options"] = options
    return action


# -- the page ------------------------------------------------------------------------

@pytest.mark.parametrize("game, players", [
    ("costly-tricks", ["Ann", "Ben"]), ("sloppy-seconds", ["Ann", "Ben", "Cat"]),
    ("fight", ["Ann", "Ben"]), ("yenta", ["Ann", "Ben", "Cat"]), ("diabolo", ["Ann", "Ben", "Cat"]),
    ("scoreboard", ["Ann", "Ben"]),
])
def test_the_control_page_has_an_entry_panel_for_the_game_at_the_table(table, game, players):
    client, _ = table
    play(client, new_game(game, players))
    html = client.get("/control").get_data(as_text=True)
    section = re.search(r'<section class="card entry" id="entry-section"([^>]*)>', html)
    assert section and "hidden" not in section.group(1)
    # the scripts, in order: the board's helpers, the panel, every game's part, then control.js
    scripts = re.findall(r'<script src="/static/([^"?]+)\?v=[0-9a-f]{10}"', html)
    assert scripts[-1] == "control.js"
    assert scripts.index("entry.js") < scripts.index(f"entry-{game}.js") < scripts.index("control.js")
    assert scripts.index("board.js") < scripts.index("entry.js")
    for name in scripts:
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and r.data, name


@pytest.mark.parametrize("actions", [[], [new_game("third-man", ["Ann", "Ben", "Cat", "Dan"])]])
def test_no_panel_for_a_game_without_one(table, actions):
    client, _ = table
    play(client, *actions)
    html = client.get("/control").get_data(as_text=True)
    assert re.search(r'<section class="card entry" id="entry-section" hidden', html)


def test_every_game_with_a_panel_has_its_script():
    from web.pages import ENTRY_GAMES as listed

    assert list(listed) == ENTRY_GAMES
    # flat files in web/static: the package data (static/*) ships them
    assert sorted(p.stem for p in STATIC.glob("entry-*.js")) == sorted(f"entry-{g}" for g in ENTRY_GAMES)
    for game in ENTRY_GAMES:
        source = (STATIC / f"entry-{game}.js").read_text(encoding="utf-8")
        assert f'C.entries["{game}"]' in source or f"C.entries.{game} " in source, game


def test_every_text_the_panels_build_goes_through_the_catalogue():
    from web.pages import JS_TEXTS

    used = set()
    for path in ENTRY_SCRIPTS:
        source = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'\bt\(\s*"((?:[^"\\]|\\.)*)"', source))
        for pair in re.findall(r'\bt\(\s*[\w.]+\s*\?\s*"((?:[^"\\]|\\.)*)"\s*:\s*"((?:[^"\\]|\\.)*)"', source):
            used |= set(pair)
        # every other t( call is a ternary of two listed texts, or Diabolo's side (heaven/hell, listed)
        for call in re.findall(r'\bt\(\s*([^"\s][^,)]*)', source):
            assert call == "ui.side" or re.match(r'[\w.]+\s*\?\s*"', call), (path.name, call)
    assert len(used) > 60
    assert not used - set(JS_TEXTS), f"texts missing from web.pages.JS_TEXTS: {sorted(used - set(JS_TEXTS))}"
    assert not [text for text, n in Counter(JS_TEXTS).items() if n > 1], "a text is listed twice"


def test_the_panel_texts_reach_the_page_in_its_language(table):
    client, _ = table
    from companion.i18n import gettext

    html = client.get("/control?lang=fr").get_data(as_text=True)
    boot = re.search(r'<script type="application/json" id="boot">(.*?)</script>', html, re.S).group(1)
    import json

    texts = json.loads(boot)["texts"]
    for text in ["Enter the trick", "Suit totals", "Hint", "Who won the auction?", "Score {color}"]:
        assert texts[text] == gettext(text, "fr")


# -- GET /api/fight/changes -------------------------------------------------------------

def test_changes_are_the_box_s_list_largest_first_without_a_credential(table):
    client, _ = table
    play(client, new_game("fight", ["Ann", "Ben"]),
         {"type": "turn", "seat": 0, "play": 10, "take": []},
         {"type": "turn", "seat": 1, "play": 5, "take": []},
         {"type": "turn", "seat": 0, "play": 1, "take": []})
    r = client.get("/api/fight/changes?play=20")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    assert r.json == {"play": 20, "seat": 1, "changes": [[10, 5, 1], [10, 5], [10, 1], [10], [5, 1], [5], [1], []]}
    # a 5 can only be changed into the 1; a 1 into nothing
    assert client.get("/api/fight/changes?play=5").json["changes"] == [[1], []]
    assert client.get("/api/fight/changes?play=1").json["changes"] == [[]]


@pytest.mark.parametrize("query, status, words", [
    ("", 400, "?play="), ("?play=", 400, "?play="), ("?play=abc", 400, "whole number"),
    ("?play=-5", 400, "whole number"), ("?play=7", 400, "not a coin of this game (coins: 20, 10, 5, 1)"),
    ("?play=99999999999", 400, "whole number"),
])
def test_changes_refuse_a_coin_that_is_not_one(table, query, status, words):
    client, _ = table
    play(client, new_game("fight", ["Ann", "Ben"]))
    r = client.get("/api/fight/changes" + query)
    assert r.status_code == status and words in r.json["error"]


@pytest.mark.parametrize("actions", [[], [new_game("yenta", ["Ann", "Ben", "Cat"])]])
def test_the_fight_routes_need_a_fight_at_the_table(table, actions):
    client, _ = table
    play(client, *actions)
    for path in ["/api/fight/changes?play=5", "/api/fight/hint"]:
        r = client.get(path)
        assert r.status_code == 409 and "not FIGHT?" in r.json["error"]


def _brute_force(table_counts: dict, played: int) -> list:
    """Every sub-multiset of the table's coins below ``played`` worth at most played - 1."""
    coins = [v for v, n in table_counts.items() for _ in range(n) if v < played]
    found = set()
    for k in range(len(coins) + 1):
        for combo in itertools.combinations(coins, k):
            if sum(combo) <= played - 1:
                found.add(tuple(sorted(combo, reverse=True)))
    return sorted(found)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), max_size=12),
       played=st.sampled_from([20, 10, 5, 1]))
def test_changes_are_exactly_the_legal_ones_in_the_box_order(table, turns, played):
    """After any legal turns, the route lists every change the rules allow,
    each once, none more, largest worth first (the first is the largest)."""
    client, session = table
    state = play(client, new_game("fight", ["Ann", "Ben", "Cat"]))
    for coin_pick, change_pick in turns:
        if state["finished"]:
            break
        purse = state["coins"][state["turn"]]
        coins = [int(v) for v, n in purse.items() if n]
        coin = coins[coin_pick % len(coins)]
        options = legal_changes(state["table"], coin)
        state = play(client, {"type": "turn", "seat": state["turn"], "play": coin,
                              "take": options[change_pick % len(options)]})
    answer = client.get(f"/api/fight/changes?play={played}").json["changes"]
    counts = {int(v): n for v, n in state["table"].items()}
    assert sorted(tuple(c) for c in answer) == _brute_force(counts, played)
    worths = [sum(c) for c in answer]
    assert worths == sorted(worths, reverse=True) and answer[-1] == []


# -- GET /api/fight/hint -----------------------------------------------------------------

def test_the_hint_of_two_players_is_the_solver_s_perfect_play(table):
    client, _ = table
    state = play(client, new_game("fight", ["Ann", "Ben"]), {"type": "turn", "seat": 0, "play": 20, "take": []})
    r = client.get("/api/fight/hint")
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    expected = fight_solver.hint(state)
    body = r.json
    assert body["action"] == expected.action() == {"type": "turn", "seat": 1, "play": expected.play,
                                                   "take": list(expected.take)}
    assert (body["seat"], body["play"], body["take"]) == (1, expected.play, list(expected.take))
    assert body["exact"] is True and body["result"] in ("win", "lose") and body["turns"] >= 1
    assert body["reason"].startswith("perfect play")
    # the hint is a legal move: the box takes it
    after = play(client, body["action"])
    assert after["turn"] == 0


def test_the_hint_with_three_players_is_labelled_or_says_why_there_is_none(table):
    client, _ = table
    play(client, new_game("fight", ["Ann", "Ben", "Cat"], coins={"5": 1, "1": 3}))
    body = client.get("/api/fight/hint").json
    assert body["exact"] is False
    if body["play"] is None:
        assert body["reason"].startswith("no hint")
    else:
        assert "teams up" in body["reason"] and body["result"] in ("win", "lose")
        assert body["action"]["seat"] == 0
    # the default coins with three players: too large to search, and it says so
    play(client, new_game("fight", ["Ann", "Ben", "Cat"]))
    body = client.get("/api/fight/hint").json
    assert body["play"] is None and body["action"] is None
    assert body["reason"] == ("no hint: with three or more players holding coins "
                              "this position is too large to search quickly")


def test_no_hint_once_the_game_is_over(table):
    client, _ = table
    state = play(client, new_game("fight", ["Ann", "Ben"], coins={"1": 1}),
                 {"type": "turn", "seat": 0, "play": 1, "take": []})        # Ann is out: Ben wins
    assert state["finished"]
    body = client.get("/api/fight/hint").json
    assert body["play"] is None and body["reason"] == "the game is over"


def thread_hints(client):
    """Hints searched on a thread of this process, so that the solver's
    budgets and functions patched here apply (the hint process has its own)."""
    from companion.hints import HintWorker

    worker = client.application.extensions["companion.hints"] = HintWorker(process=False)
    return worker


def test_a_position_too_large_for_the_budget_gets_no_hint_and_a_reason(table, monkeypatch):
    client, _ = table
    thread_hints(client)
    play(client, new_game("fight", ["Ann", "Ben"], coins={"7": 2, "3": 3, "1": 5}))
    fight_solver.duel.cache_clear()
    monkeypatch.setattr(fight_solver, "HINT_BUDGET", 5)
    body = client.get("/api/fight/hint").json
    fight_solver.duel.cache_clear()          # the cut-short search leaves nothing behind for other tests
    assert body["play"] is None and "too large to solve quickly" in body["reason"]


def test_the_hint_reason_is_in_the_request_s_language(table):
    from companion.i18n import gettext

    client, _ = table
    play(client, new_game("fight", ["Ann", "Ben"]))
    english = client.get("/api/fight/hint").json["reason"]
    french = client.get("/api/fight/hint?lang=fr").json["reason"]
    assert french == gettext(english, "fr")


def test_the_hint_searches_outside_the_session_lock_once_per_position(table, monkeypatch):
    client, session = table
    thread_hints(client)
    play(client, new_game("fight", ["Ann", "Ben"]))
    calls = []
    real = fight_solver.hint

    def watched(state, budget=None):
        # While the solver thinks, another thread (the box, a phone) can take the lock.
        got = []
        other = threading.Thread(target=lambda: got.append(session.lock.acquire(timeout=30) and session.lock.release() is None))
        other.start()
        other.join()
        calls.append(got == [True])
        return real(state, budget)

    monkeypatch.setattr(fight_solver, "hint", watched)
    first = client.get("/api/fight/hint").json
    assert client.get("/api/fight/hint").json == first
    assert calls == [True], "the same position is searched once, outside the lock"
    play(client, first["action"])
    client.get("/api/fight/hint")
    assert calls == [True, True], "a new position is searched again"
