"""The phone pages with Flask's test client: every page renders every game,
speaks the request's language, and never carries a secret; the score
history behind the chart; the join QR.

(What the pages *do* in a browser is tests/browser/test_browser.py.)"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from web_support import PIN, FakeBox, make_app, make_session, pin_headers

PAGES = ["/", "/seat", "/seat/0", "/seat/1", "/control", "/join"]
STATIC = Path(__file__).resolve().parents[2] / "web" / "static"
OUR_SCRIPTS = ["common.js", "chart.js", "games.js", "board.js", "seat.js", "control.js", "clock.js"]


def third_man_round() -> list[dict]:
    """A first round played to its end (bids that push a score furthest),
    then a second round with its lead's card shown and one secret entered."""
    from companion.games.third_man import score_bid
    from companion.timeline import Timeline

    timeline = Timeline()
    actions = [{"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}]
    timeline.apply(actions[0])
    while not timeline.public()["rounds"]:
        p = timeline.public()
        best = max((c for c in itertools.product(*p["hands"]) if score_bid(c) is not None),
                   key=lambda c: max(abs(s + g) for s, g in zip(p["scores"], score_bid(c))))
        for k in range(4):
            seat = (p["lead"] + k) % 4
            actions.append({"type": "bid", "seat": seat, "card": best[seat]})
            timeline.apply(actions[-1])
    lead = timeline.public()["lead"]
    actions.append({"type": "bid", "seat": lead, "card": 4})
    actions.append({"type": "bid", "seat": (lead + 1) % 4, "card": 6})       # a secret, still hidden
    return actions


# One sample per game: the states its page has to show (round ends, hands,
# reveals, and a secret still pending where the game has secrets).
SAMPLES = {
    "third-man": third_man_round(),
    "costly-tricks": [
        {"type": "new_game", "game": "costly-tricks", "players": ["Ann", "Ben"]},
        {"type": "deal", "lead": 0},
        {"type": "trick", "cards": [["S", 7], ["S", 9], ["H", 1], ["S", 10]]},
        {"type": "trick", "winner": 1, "points": 12},
    ],
    "fight": [
        {"type": "new_game", "game": "fight", "players": ["Ann", "Ben", "Cat"]},
        {"type": "turn", "seat": 0, "play": 10, "take": []},
        {"type": "turn", "seat": 1, "play": 5, "take": []},
        {"type": "turn", "seat": 2, "play": 20, "take": [10, 5]},
    ],
    "sloppy-seconds": [
        {"type": "new_game", "game": "sloppy-seconds", "players": ["Ann", "Ben", "Cat", "Dan"]},
        {"type": "hand", "points": [{"S": 50, "H": 23, "D": 10, "C": 91}, {"S": 41, "H": 23, "D": 20, "C": 0},
                                    {"S": 0, "H": 45, "D": 30, "C": 0}, {"S": 0, "H": 0, "D": 31, "C": 0}]},
        {"type": "trick", "cards": ["4C", "KC", "9H", "2C"]},
        {"type": "trick", "cards": ["5S", "JS", "3D", "QS"]},
    ],
    "yenta": [
        {"type": "new_game", "game": "yenta", "players": ["Ann", "Ben", "Cat"]},
        {"type": "bid", "seat": 1, "amount": 10},
        {"type": "ask", "seat": 1, "target": 2, "value": 3, "hit": True},
        {"type": "ask", "seat": 1, "target": 2, "value": 6, "hit": True},
        {"type": "ask", "seat": 1, "target": 0, "value": 2, "hit": False},
        {"type": "ask", "seat": 2, "target": 0, "value": 5, "hit": True},
        {"type": "ask", "seat": 2, "target": 1, "value": 2, "hit": False},
        {"type": "ask", "seat": 0, "target": 1, "value": 4, "hit": True},
        {"type": "ask", "seat": 0, "target": 1, "value": 4, "hit": True},
        {"type": "ask", "seat": 0, "target": 2, "value": 4, "hit": True},
        {"type": "last", "seat": 0, "dice": [1]},
        {"type": "bid", "seat": 2, "amount": 15},
    ],
    "diabolo": [
        {"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]},
        {"type": "score", "color": "blue", "hands": [2, 9, 4], "doubles": [1], "heaven": 8, "hell": 3},
        {"type": "score", "color": "red", "hands": [3, 3, 7], "heaven": 2, "hell": 5},
        {"type": "double", "seat": 2, "color": "green", "play": True},      # a secret, still hidden
    ],
    "scoreboard": [
        {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Cat"]},
        {"type": "add", "seat": 1, "points": 7},
        {"type": "token", "seat": 0, "delta": 1},
        {"type": "secret", "seat": 1, "value": 4},
        {"type": "secret", "seat": 0, "value": 9},
        {"type": "secret", "seat": 2, "value": 11},
        {"type": "secret", "seat": 2, "value": 12345},                     # a secret, still hidden
    ],
}


@pytest.fixture
def table(session):
    app = make_app(session, mock=True, box=FakeBox(), url="http://192.168.1.20:8000/", names=["Ann", "Zoë"])
    yield app.test_client(), session
    app.extensions["companion"].close()


def play(client, actions):
    for action in actions:
        r = client.post("/api/actions", json=action, headers=pin_headers())
        assert r.status_code == 200, (action, r.json)


def boot_of(html: str) -> dict:
    """The data a page hands its script (<script type=application/json id=boot>)."""
    found = re.search(r'<script type="application/json" id="boot">(.*?)</script>', html, re.S)
    assert found, "the page has no boot data"
    return json.loads(found.group(1))


def text_of(html: str) -> str:
    """The page's visible text, roughly: no tags, no boot data, no scripts."""
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


# -- every page, every game ----------------------------------------------------------

def test_every_page_answers_before_the_first_game(table):
    client, _ = table
    for path in PAGES:
        r = client.get(path)
        assert r.status_code == 200 and r.mimetype == "text/html", path
        assert r.headers["Cache-Control"] == "no-store"
        assert boot_of(r.get_data(as_text=True))["state"] == {"game": None}
    assert "No game yet." in client.get("/").get_data(as_text=True)


@pytest.mark.parametrize("game", sorted(SAMPLES))
def test_every_page_renders_every_game(table, game):
    client, session = table
    play(client, SAMPLES[game])
    public = client.get("/api/state").json
    for path in PAGES:
        html = client.get(path).get_data(as_text=True)
        boot = boot_of(html)
        assert boot["state"] == public, path
        assert boot["texts"] and boot["titles"][game]
        for name in public["players"]:
            assert name in html, (path, name)
    board = text_of(client.get("/").get_data(as_text=True))
    assert boot_of(client.get("/").get_data(as_text=True))["titles"][game] in board
    for score in public["scores"]:
        shown = str(score).replace("-", "\u2212")            # a real minus sign, as everywhere on a phone
        assert re.search(rf"(?<![\d\u2212-]){shown}(?!\d)", board), f"score {shown} not on the board"
    assert not re.search(r"(?<![\w-])-\d", board), "a hyphen for a minus sign"


def test_a_finished_game_names_its_winner(table):
    client, _ = table
    play(client, [{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"], "options": {"target": 10}},
                  {"type": "add", "seat": 1, "points": 12}])
    board = text_of(client.get("/").get_data(as_text=True))
    assert "Game over" in board and "Ben" in board.split("Game over", 1)[1]


def test_player_names_are_text_never_markup(table):
    client, _ = table
    play(client, [{"type": "new_game", "game": "scoreboard", "players": ["<b>Bo</b>", "Al</script>"]}])
    for path in PAGES:
        html = client.get(path).get_data(as_text=True)
        assert "<b>Bo</b>" not in html and "Al</script>" not in html, path
        assert boot_of(html)["state"]["players"] == ["<b>Bo</b>", "Al</script>"]


# -- language -----------------------------------------------------------------------------

@pytest.mark.parametrize("header, query, lang", [
    ("fr-FR,fr;q=0.9,en;q=0.5", "", "fr"),
    ("en-GB,en;q=0.8", "", "en"),
    ("de-DE,de;q=0.9", "", "en"),           # neither: the box's language (en here)
    ("fr", "?lang=en", "en"),               # ?lang wins
    ("", "?lang=fr", "fr"),
])
def test_the_page_language_follows_the_request(table, header, query, lang):
    client, _ = table
    headers = {"Accept-Language": header} if header else {}
    for path in PAGES + ["/dev"]:
        r = client.get(path + query, headers=headers)
        assert f'<html lang="{lang}">' in r.get_data(as_text=True), path
        if path != "/dev":
            assert r.headers["Content-Language"] == lang
            assert boot_of(r.get_data(as_text=True))["lang"] == lang


def test_every_text_the_scripts_build_goes_through_the_catalogue(table):
    from web.pages import JS_TEXTS

    client, _ = table
    listed = set(JS_TEXTS)
    used = set()
    for path in [STATIC / name for name in OUR_SCRIPTS]:
        source = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'\bt\(\s*"((?:[^"\\]|\\.)*)"', source))
        for pair in re.findall(r'\bt\(\s*[\w.]+\s*\?\s*"((?:[^"\\]|\\.)*)"\s*:\s*"((?:[^"\\]|\\.)*)"', source):
            used |= set(pair)
    assert len(used) > 100
    assert not used - listed, f"texts missing from web.pages.JS_TEXTS: {sorted(used - listed)}"
    assert set(boot_of(client.get("/").get_data(as_text=True))["texts"]) == listed


# -- secrets ---------------------------------------------------------------------------------

def outputs(tmp_path, actions, claims=()) -> list:
    """Every page and the history after ``actions``, on a fresh table."""
    session = make_session(tmp_path)
    app = make_app(session, mock=True, box=FakeBox(), url="http://192.168.1.20:8000/")
    client = app.test_client()
    try:
        play(client, actions[:-1])
        for seat in claims:     # claimed before the secret entry (a locked seat cannot be claimed)
            assert client.post(f"/api/seats/{seat}/claim", headers=pin_headers()).status_code == 200
        play(client, actions[-1:])
        seen = [client.get(path).data for path in PAGES + ["/dev", "/api/history/current", "/api/state"]]
        return seen + [client.get(path, headers={"Accept-Language": "fr"}).data for path in PAGES]
    finally:
        app.extensions["companion"].close()
        session.store.close()


@pytest.mark.parametrize("game, secret, other", [
    ("third-man", {"type": "bid", "seat": 1, "card": 7}, {"type": "bid", "seat": 1, "card": 8}),
    ("scoreboard", {"type": "secret", "seat": 1, "value": 271828}, {"type": "secret", "seat": 1, "value": -3}),
    ("diabolo", {"type": "double", "seat": 0, "color": "green", "play": True},
     {"type": "double", "seat": 0, "color": "green", "play": False}),
])
def test_no_page_and_no_history_depends_on_an_unrevealed_secret(tmp_path, game, secret, other):
    start = {"third-man": [SAMPLES["third-man"][0], {"type": "bid", "seat": 0, "card": 5}],
             "scoreboard": [{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Cat"]}],
             "diabolo": [{"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Cat"]}]}[game]
    one = outputs(tmp_path / "one", start + [secret], claims=[1])
    two = outputs(tmp_path / "two", start + [other], claims=[1])
    assert one == two, "a public page or the history shows a secret entry's value"
    if game == "scoreboard":
        assert not any(b"271828" in page for page in one)


def test_the_history_shows_a_secret_once_revealed(table):
    client, _ = table
    play(client, [{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]},
                  {"type": "secret", "seat": 0, "value": 31}])
    steps = client.get("/api/history/current").json["steps"]
    assert steps[-1]["action"] == {"type": "secret", "seat": 0, "value": None}
    play(client, [{"type": "secret", "seat": 1, "value": 47}])
    steps = client.get("/api/history/current").json["steps"]
    assert [s["action"].get("value") for s in steps[1:]] == [31, 47]
    assert steps[-1]["state"]["reveal"] == [31, 47]


# -- the history behind the chart -----------------------------------------------------------------

def test_the_history_is_the_steps_in_effect_with_what_each_changed(table):
    client, _ = table
    assert client.get("/api/history/current").json == {"game": None, "players": [], "steps": []}
    play(client, [{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]},
                  {"type": "add", "seat": 0, "points": 5},
                  {"type": "add", "seat": 1, "points": 99},
                  {"type": "undo"},                          # 99 was a mistake: gone from the history
                  {"type": "add", "seat": 1, "points": 3}])
    r = client.get("/api/history/current")
    assert r.headers["Cache-Control"] == "no-store"
    body = r.json
    assert body["game"] == "scoreboard" and body["players"] == ["Ann", "Ben"]
    assert [s["n"] for s in body["steps"]] == [1, 2, 5]            # log line numbers
    first, *rest = body["steps"]
    assert first["state"] == client.get("/api/state").json | {"scores": [0, 0]}
    assert [s["state"] for s in rest] == [{"scores": [5, 0]}, {"scores": [5, 3]}]


def test_the_history_is_replayed_once_per_change(table, monkeypatch):
    import web.pages

    client, _ = table
    calls = []
    real = web.pages.public_steps
    monkeypatch.setattr(web.pages, "public_steps", lambda lines: calls.append(1) or real(lines))
    play(client, [{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]}])
    first = client.get("/api/history/current").data
    assert client.get("/api/history/current").data == first and len(calls) == 1
    assert client.post("/api/seats/0/claim", headers=pin_headers()).status_code == 200
    client.get("/api/history/current")
    assert len(calls) == 1, "a seat claim does not change the game's history"
    play(client, [{"type": "add", "seat": 0, "points": 1}])
    assert client.get("/api/history/current").data != first and len(calls) == 2


# -- joining -----------------------------------------------------------------------------------------

def without_qr_and_hashes(html: str) -> str:
    return re.sub(r"v=[0-9a-f]+", "", re.sub(r"<svg.*?</svg>", "", html, flags=re.S))


def test_the_join_page_shows_the_url_as_a_qr_code_but_never_the_pin(table):
    client, _ = table
    html = client.get("/join").get_data(as_text=True)
    assert "http://192.168.1.20:8000/" in html
    svg = re.search(r"<svg.*?</svg>", html, re.S).group(0)
    assert 'viewBox="0 0 29 29"' in svg                      # version 2 + border: scales to the screen
    assert PIN not in without_qr_and_hashes(html)
    for path in PAGES:
        assert PIN not in without_qr_and_hashes(client.get(path).get_data(as_text=True)), path


def test_the_dev_page_shows_the_qr_code_and_the_pin(table):
    client, _ = table
    html = client.get("/dev").get_data(as_text=True)
    assert "<svg" in html and f'id="pin">{PIN}<' in html and 'href="/join"' in html


def test_the_join_page_exists_on_a_real_box_too(session):
    app = make_app(session, mock=False)
    try:
        client = app.test_client()
        assert client.get("/join").status_code == 200 and client.get("/dev").status_code == 404
    finally:
        app.extensions["companion"].close()


def test_static_files_are_served_with_a_content_hash(table):
    client, _ = table
    html = client.get("/").get_data(as_text=True)
    links = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert {link.split("?")[0] for link in links} >= {"/static/companion.css", "/static/common.js", "/static/board.js"}
    for link in links:
        assert re.search(r"\?v=[0-9a-f]{10}$", link), link
        assert client.get(link).status_code == 200


# -- mDNS --------------------------------------------------------------------------------------------

def test_mdns_never_raises_and_always_returns_a_stop_function(monkeypatch):
    import web.mdns as mdns

    def broken(**kwargs):
        raise OSError(99, "Cannot assign requested address")

    monkeypatch.setattr(mdns, "_addresses", lambda: ["192.168.1.20"])
    stop = mdns.start_mdns("companion", 8000, zeroconf_factory=broken)
    assert stop() is None
    monkeypatch.setattr(mdns, "_addresses", lambda: [])
    assert mdns.start_mdns("companion", 8000)() is None


def test_mdns_registers_the_friendly_name_and_withdraws_it(monkeypatch):
    import web.mdns as mdns

    class FakeZeroconf:
        def __init__(self, **kwargs):
            self.calls = []
            made.append(self)

        def register_service(self, info, allow_name_change=False):
            self.calls.append(("register", info.name, info.port, allow_name_change, info.properties))

        def unregister_service(self, info):
            self.calls.append(("unregister", info.name))

        def close(self):
            self.calls.append(("close",))

    made = []
    monkeypatch.setattr(mdns, "_addresses", lambda: ["192.168.1.20"])
    stop = mdns.start_mdns("Game.table", 8000, zeroconf_factory=FakeZeroconf)
    stop()
    assert made[0].calls == [
        ("register", "Game-table._http._tcp.local.", 8000, True, {b"path": b"/"}),
        ("unregister", "Game-table._http._tcp.local."),
        ("close",),
    ]
    assert mdns.instance_name("é" * 40).encode() == ("é" * 31).encode()       # 63 bytes at most


# -- seats as people count them (issue 19) ----------------------------------------------------

@pytest.mark.parametrize("lang, first, second, tenth", [("en", "seat 1", "seat 2", "seat 10"),
                                                        ("fr", "place 1", "place 2", "place 10")])
def test_every_message_a_phone_shows_counts_seats_from_1(table, lang, first, second, tenth):
    """The API's seat indices stay 0-based (docs/api.md); what a person reads
    names the first seat 1, as the box does ("Seat 4" for the fourth player)."""
    client, _ = table
    play(client, [{"type": "new_game", "game": "fight", "players": ["Ann", "Ben", "Chloé"]}])
    q = f"?lang={lang}"
    token = client.post(f"/api/seats/0/claim{q}", headers=pin_headers()).json["token"]
    said = {
        "claimed": client.post(f"/api/seats/0/claim{q}", headers=pin_headers()).json["error"],
        "no such seat": client.post(f"/api/seats/9/claim{q}", headers=pin_headers()).json["error"],
        "other's token": client.get(f"/api/seats/1/view{q}", headers={"X-Seat-Token": token}).json["error"],
        "not its turn": client.post(f"/api/actions{q}", json={"type": "turn", "seat": 1, "play": 1, "take": []},
                                    headers=pin_headers()).json["error"],
    }
    assert first in said["claimed"], said
    assert tenth in said["no such seat"] and "3" in said["no such seat"] and " 0 " not in said["no such seat"], said
    assert second in said["other's token"], said
    assert second in said["not its turn"] and first in said["not its turn"], said       # seat 2 tried; seat 1 plays
    bad_index = client.post(f"/api/actions{q}", json={"type": "turn", "seat": 3, "play": 1, "take": []},
                            headers=pin_headers()).json["error"]
    assert "3" in bad_index and "1" in bad_index and "0" in bad_index, bad_index     # index 3; indices 0-2; seats 1-3
