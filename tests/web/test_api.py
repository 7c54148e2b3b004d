"""The web API through Flask's test client: one test per promise of docs/api.md."""

from __future__ import annotations

import io
import json

import pytest

from web_support import PIN, FakeBox, app, client, make_app, pin_headers, wait_until  # noqa: F401 (fixtures)

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}
SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}


def post(client, action, headers=None, **kw):
    return client.post("/api/actions", json=action, headers=headers if headers is not None else pin_headers(), **kw)


def stored_lines(session):
    return session.export_lines() if session.game_id is not None else []


def claim(client, seat, name=None):
    body = {"name": name} if name else None
    r = client.post(f"/api/seats/{seat}/claim", json=body, headers=pin_headers())
    assert r.status_code == 200, r.json
    return r.json["token"]


# -- GET /api/state ---------------------------------------------------------------

def test_state_before_any_game_is_game_null(client):
    r = client.get("/api/state")
    assert r.status_code == 200
    assert r.json == {"game": None}
    assert r.headers["Cache-Control"] == "no-store"


def test_state_has_the_replay_keys_in_order(client, session):
    post(client, THIRD_MAN)
    r = client.get("/api/state")
    assert list(r.json) == list(session.public())
    assert r.json["players"] == ["Ann", "Ben", "Chloé", "Dan"]
    assert "Chloé".encode() in r.data          # UTF-8 JSON, not \u escapes


def test_games_lists_what_a_new_game_form_needs(session):
    app = make_app(session, names=["Ann", "Zoë"])
    r = app.test_client().get("/api/games")
    assert r.status_code == 200
    games = {g["id"]: g for g in r.json["games"]}
    assert games["third-man"] == {
        "id": "third-man", "title": "The Third Man", "min_players": 4, "max_players": 4,
        "options": {"first_lead": {"kind": "seat", "required": False, "default": 0},
                    "tokens_to_win": {"kind": "int", "required": False, "default": 3, "min": 1}},
        "seat_entries": ["bid"]}
    assert games["scoreboard"]["seat_entries"] == ["secret"]
    assert r.json["names"] == ["Ann", "Zoë"]


# -- POST /api/actions: the PIN -------------------------------------------------

def test_new_game_with_the_pin_answers_the_new_public_state(client, session):
    r = post(client, THIRD_MAN)
    assert r.status_code == 200
    assert r.json == session.public() == client.get("/api/state").json
    assert r.json["game"] == "third-man"
    assert session.store.latest_unfinished().game == "third-man"


def test_an_action_without_credentials_is_401_and_stores_nothing(client, session):
    r = post(client, THIRD_MAN, headers={})
    assert r.status_code == 401
    assert "X-Table-Pin" in r.json["error"]
    assert session.public() == {"game": None}
    assert session.store.games() == []


def test_a_wrong_pin_is_403_and_stores_nothing(client, session):
    r = post(client, THIRD_MAN, headers=pin_headers("1357"))
    assert r.status_code == 403
    assert r.json == {"error": "wrong table PIN (it is shown on the box)"}
    assert session.store.games() == []


def test_new_game_stores_the_current_game_and_starts_a_new_one(client, session):
    post(client, SCOREBOARD)
    post(client, {"type": "add", "seat": 1, "points": 5})
    first = session.game_id
    r = post(client, THIRD_MAN)
    assert r.status_code == 200 and r.json["game"] == "third-man"
    assert session.game_id != first
    assert session.store.lines(first)[-1] == '{"type": "add", "seat": 1, "points": 5}'


def test_rule_error_is_409_with_the_core_message_and_nothing_stored(client, session):
    post(client, THIRD_MAN)
    before = (session.version, stored_lines(session))
    r = post(client, {"type": "bid", "seat": 2, "card": 4})
    assert r.status_code == 409
    assert r.json == {"error": "Chloé cannot bid yet: Ann leads this bid and shows a card first"}
    assert (session.version, stored_lines(session)) == before


@pytest.mark.parametrize("action, fragment", [
    ({"type": "bid", "seat": 0, "card": "5"}, "card"),
    ({"type": "bid", "seat": 0, "card": 5.0}, "card"),
    ({"type": "bid", "seat": True, "card": 5}, "seat"),
    ({"type": "bid", "seat": 0}, "card"),
    ({"type": "bid", "seat": 0, "card": 5, "extra": 1}, "extra"),
    ({"type": "fly", "seat": 0}, "fly"),
    ({"seat": 0, "card": 5}, "type"),
    ([1, 2], "object"),
    ("bid", "object"),
    (None, "object"),
])
def test_malformed_actions_are_400_and_say_what_is_wrong(client, session, action, fragment):
    post(client, THIRD_MAN)
    before = (session.version, stored_lines(session))
    r = post(client, action)
    assert r.status_code == 400, r.json
    assert fragment in r.json["error"]
    assert (session.version, stored_lines(session)) == before


def test_store_failure_is_503_not_500(client, session, monkeypatch):
    from companion.errors import StoreError

    post(client, SCOREBOARD)

    def broken(*args, **kwargs):
        raise StoreError("the disk is full")
    monkeypatch.setattr(session.store, "append", broken)
    r = post(client, {"type": "add", "seat": 0, "points": 1})
    assert r.status_code == 503
    assert r.json == {"error": "the disk is full"}
    assert session.public()["scores"] == [0, 0, 0]


def test_an_unexpected_bug_is_a_json_500_without_traceback(client, session, monkeypatch):
    def boom():
        raise RuntimeError("secret internals")
    monkeypatch.setattr(session, "public", boom)
    r = client.get("/api/state")
    assert r.status_code == 500
    assert r.json == {"error": "internal error: see the companion's log"}
    assert b"Traceback" not in r.data and b"secret internals" not in r.data


# -- hostile requests: always a clear 4xx, never a 500, nothing stored ----------------

HOSTILE = [
    # (method, path, kwargs, expected status)
    ("POST", "/api/actions", dict(data=b"{not json", content_type="application/json"), 400),
    ("POST", "/api/actions", dict(data=b"", content_type="application/json"), 400),
    ("POST", "/api/actions", dict(data=b"\xff\xfe\x00", content_type="application/json"), 400),
    ("POST", "/api/actions", dict(data=b'{"type": NaN}', content_type="application/json"), 400),
    ("POST", "/api/actions", dict(data=b"[" * 7000 + b"]" * 7000, content_type="application/json"), 400),
    ("POST", "/api/actions", dict(data=b'{"type": "add", "seat": 0, "points": ' + b"9" * 5000 + b"}",
                                  content_type="application/json"), 400),
    ("POST", "/api/actions", dict(data=b"x" * 40_000, content_type="application/json"), 413),
    ("POST", "/api/actions", dict(data=b'{"type": "undo"}', content_type="text/html"), 415),
    ("POST", "/api/actions", dict(data=b"type=undo", content_type="application/x-www-form-urlencoded"), 415),
    ("POST", "/api/actions", dict(json={"type": "new_game", "game": "chess", "players": ["a"]}), 400),
    ("POST", "/api/actions", dict(json={"type": "new_game", "game": "third-man", "players": ["a", "a", "b", "c"]}), 400),
    ("POST", "/api/actions", dict(json={"type": "add", "seat": 9, "points": 1}), 400),
    ("POST", "/api/actions", dict(json={"type": "add", "seat": -1, "points": 1}), 400),
    ("POST", "/api/actions", dict(json={"type": "token", "seat": 0, "delta": -1}), 409),
    ("POST", "/api/actions", dict(json={"type": {"nested": "type"}}), 400),
    ("GET", "/api/actions", {}, 405),
    ("PUT", "/api/state", dict(json={}), 405),
    ("DELETE", "/api/seats/0/claim", {}, 405),
    ("GET", "/api/nothing", {}, 404),
    ("GET", "/../../etc/passwd", {}, 404),
    ("POST", "/api/seats/zero/claim", {}, 404),
    ("POST", "/api/seats/-1/claim", {}, 404),
    ("POST", "/api/seats/7/claim", {}, 404),
    ("POST", "/api/seats/0/claim", dict(json=[1]), 400),
    ("POST", "/api/seats/0/claim", dict(json={"name": 5}), 400),
    ("POST", "/api/seats/0/claim", dict(json={"name": "x" * 40}), 400),
    ("POST", "/api/seats/0/claim", dict(json={"label": "x"}), 400),
    ("GET", "/api/seats/0/view", {}, 401),
    ("POST", "/api/seats/9/release", {}, 404),
    ("POST", "/dev/buttons/ok/press", {}, 404),
    ("GET", "/dev", {}, 404),
    ("GET", "/oled.png", {}, 503),
]


@pytest.mark.parametrize("method, path, kwargs, status", HOSTILE)
def test_hostile_requests_get_a_clear_json_4xx_and_change_nothing(client, session, method, path, kwargs, status):
    post(client, SCOREBOARD)
    before = (session.version, stored_lines(session), dict(session.table.claims))
    r = client.open(path, method=method, headers=pin_headers(), **kwargs)
    assert r.status_code == status, (r.status_code, r.data[:200])
    assert r.mimetype == "application/json"
    assert set(r.json) == {"error"} and r.json["error"].strip()
    assert "Traceback" not in r.json["error"]
    assert (session.version, stored_lines(session), dict(session.table.claims)) == before


def test_405_says_which_methods_are_allowed(client):
    r = client.put("/api/state")
    assert r.status_code == 405
    assert "GET" in r.headers["Allow"] and "GET" in r.json["error"]


# -- PIN guessing is throttled per client, never for long -------------------------

def test_five_wrong_pins_block_that_client_for_a_few_seconds_only(session):
    app = make_app(session, pin_block_s=0.4)
    c = app.test_client()
    for _ in range(4):
        assert post(c, THIRD_MAN, headers=pin_headers("0000")).status_code == 403
    assert post(c, THIRD_MAN, headers=pin_headers("0000")).status_code == 403   # fifth: block starts
    r = post(c, THIRD_MAN)                                                        # even the right PIN waits
    assert r.status_code == 429
    assert 1 <= int(r.headers["Retry-After"]) <= 5
    assert "wait" in r.json["error"]
    other = app.test_client()
    r = post(other, THIRD_MAN, environ_base={"REMOTE_ADDR": "10.0.0.9"})       # another phone is not blocked
    assert r.status_code == 200
    assert wait_until(lambda: post(c, {"type": "undo"}).status_code != 429, timeout=30)
    assert session.store.games()[0].game == "third-man"


def test_the_block_never_grows_beyond_its_few_seconds(session):
    app = make_app(session, pin_block_s=0.3)
    c = app.test_client()
    for _ in range(30):            # keep hammering through blocks
        post(c, SCOREBOARD, headers=pin_headers("9999"))
    assert wait_until(lambda: post(c, SCOREBOARD).status_code == 200, timeout=30)


def test_a_right_pin_resets_the_count_of_wrong_ones(client):
    for _ in range(4):
        post(client, SCOREBOARD, headers=pin_headers("0000"))
    assert post(client, SCOREBOARD).status_code == 200
    for _ in range(4):
        assert post(client, {"type": "undo"}, headers=pin_headers("0000")).status_code == 403
    assert post(client, {"type": "add", "seat": 0, "points": 1}).status_code == 200


# -- seats -------------------------------------------------------------------

def test_seats_list_before_any_game_is_empty_and_claims_are_404(client):
    assert client.get("/api/seats").json == {"seats": []}
    r = client.post("/api/seats/0/claim", headers=pin_headers())
    assert r.status_code == 404 and "no game yet" in r.json["error"]


def test_claim_needs_the_pin_and_gives_a_token_once(client, session):
    post(client, THIRD_MAN)
    assert client.post("/api/seats/1/claim").status_code == 401
    assert client.post("/api/seats/1/claim", headers=pin_headers("1111")).status_code == 403
    r = client.post("/api/seats/1/claim", json={"name": "Ben's phone"}, headers=pin_headers())
    assert r.status_code == 200
    token = r.json["token"]
    assert r.json == {"seat": 1, "token": token, "label": "Ben's phone"}
    assert len(token) >= 32
    again = client.post("/api/seats/1/claim", headers=pin_headers())
    assert again.status_code == 409 and "already claimed" in again.json["error"]
    seats = client.get("/api/seats").json["seats"]
    assert seats[1] == {"seat": 1, "player": "Ben", "claimed": True, "label": "Ben's phone"}
    assert seats[0] == {"seat": 0, "player": "Ann", "claimed": False, "label": None}
    assert session.table.claims == {1: "Ben's phone"}          # the box shows the label...
    assert token not in json.dumps(client.get("/api/seats").json)   # ...never the token


def test_a_seat_whose_entry_is_locked_cannot_be_claimed_until_the_reveal(client, session):
    post(client, THIRD_MAN)
    session.submit({"type": "bid", "seat": 0, "card": 5})
    session.submit({"type": "bid", "seat": 2, "card": 7})       # Chloé locked a card on the buttons
    r = client.post("/api/seats/2/claim", headers=pin_headers())
    assert r.status_code == 409 and "reveal" in r.json["error"] and "7" not in r.text
    assert client.post("/api/seats/1/claim", headers=pin_headers()).status_code == 200
    for seat, card in ((1, 8), (3, 1)):
        session.submit({"type": "bid", "seat": seat, "card": card})
    assert client.post("/api/seats/2/claim", headers=pin_headers()).status_code == 200


def test_a_claim_without_a_name_is_labelled_phone(client, session):
    post(client, THIRD_MAN)
    r = client.post("/api/seats/3/claim", headers=pin_headers())
    assert r.json["label"] == "phone" and session.table.claims == {3: "phone"}


def test_seat_view_with_its_token_shows_its_own_entry_only(client):
    post(client, THIRD_MAN)
    ben, chloe = claim(client, 1), claim(client, 2)
    post(client, {"type": "bid", "seat": 0, "card": 6})
    assert post(client, {"type": "bid", "seat": 1, "card": 8}, headers={"X-Seat-Token": ben}).status_code == 200
    mine = client.get("/api/seats/1/view", headers={"X-Seat-Token": ben})
    assert mine.status_code == 200
    assert mine.json["locked"] == 8 and mine.json["seat"] == 1
    theirs = client.get("/api/seats/2/view", headers={"X-Seat-Token": chloe}).json
    assert theirs["locked"] is None and "8" not in json.dumps(theirs["pending"])
    assert client.get("/api/seats/1/view", headers={"X-Seat-Token": chloe}).status_code == 403
    assert client.get("/api/seats/1/view", headers=pin_headers()).status_code == 401   # the PIN writes, never reads


def test_a_seat_token_enters_only_its_own_seats_entries(client, session):
    post(client, THIRD_MAN)
    ben = claim(client, 1)
    token = {"X-Seat-Token": ben}
    assert post(client, {"type": "bid", "seat": 2, "card": 3}, headers=token).status_code == 403
    assert post(client, THIRD_MAN, headers=token).status_code == 403
    assert post(client, {"type": "undo"}, headers=token).status_code == 403
    post(client, {"type": "bid", "seat": 0, "card": 6})
    r = post(client, {"type": "bid", "seat": 1, "card": 2}, headers=token)
    assert r.status_code == 200 and r.json["pending"]["entered"] == [0, 1]
    r = post(client, {"type": "bid", "seat": 1, "card": 3}, headers=token)         # the rules still apply
    assert r.status_code == 409 and "already entered" in r.json["error"]


def test_the_third_man_lead_enters_its_open_card_with_its_token(client):
    post(client, THIRD_MAN)
    ann = claim(client, 0)
    r = post(client, {"type": "bid", "seat": 0, "card": 9}, headers={"X-Seat-Token": ann})
    assert r.status_code == 200 and r.json["pending"]["lead_card"] == 9


def test_a_scoreboard_token_enters_its_secret_but_not_points(client):
    post(client, SCOREBOARD)
    token = {"X-Seat-Token": claim(client, 0)}
    assert post(client, {"type": "add", "seat": 0, "points": 50}, headers=token).status_code == 403
    r = post(client, {"type": "secret", "seat": 0, "value": 12}, headers=token)
    assert r.status_code == 200 and r.json["entered"] == [0]


def test_release_by_the_token_holder_or_the_pin_clears_the_token(client, session):
    post(client, THIRD_MAN)
    ben = claim(client, 1)
    assert client.post("/api/seats/1/release").status_code == 401
    assert client.post("/api/seats/1/release", headers={"X-Seat-Token": "forged"}).status_code == 403
    r = client.post("/api/seats/1/release", headers={"X-Seat-Token": ben})
    assert r.status_code == 200 and r.json == {"seat": 1, "claimed": False}
    assert session.table.claims == {}
    assert client.get("/api/seats/1/view", headers={"X-Seat-Token": ben}).status_code == 403
    assert post(client, {"type": "bid", "seat": 1, "card": 1}, headers={"X-Seat-Token": ben}).status_code == 403
    chloe = claim(client, 2)
    assert client.post("/api/seats/2/release", headers=pin_headers()).status_code == 200
    assert client.get("/api/seats/2/view", headers={"X-Seat-Token": chloe}).status_code == 403
    assert claim(client, 2) != chloe


def test_a_claim_released_from_the_box_voids_the_token(client, session):
    post(client, THIRD_MAN)
    dan = claim(client, 3)
    session.update_table(lambda table: table.claims.pop(3))      # what the box's menu does
    assert client.get("/api/seats/3/view", headers={"X-Seat-Token": dan}).status_code == 403
    assert claim(client, 3)


def test_a_seat_token_ends_with_its_game(client, session):
    """Finding 4 (issue 13): a token claimed in one game read secrets in the next."""
    post(client, THIRD_MAN)
    dan = claim(client, 3)
    post(client, THIRD_MAN)                                       # play again, nothing said about the phones
    assert session.table.claims == {}
    assert client.get("/api/seats").json["seats"][3]["claimed"] is False
    r = client.get("/api/seats/3/view", headers={"X-Seat-Token": dan})
    assert r.status_code == 403
    post(client, {"type": "bid", "seat": 0, "card": 1})           # Ann shows a card; Dan's turn comes
    assert post(client, {"type": "bid", "seat": 3, "card": 3}, headers={"X-Seat-Token": dan}).status_code == 403


def test_keep_claims_keeps_the_claims_of_the_seats_the_new_game_still_has(client, session):
    post(client, THIRD_MAN)
    ann, dan = claim(client, 0), claim(client, 3)
    post(client, {**THIRD_MAN, "keep_claims": True})             # same phones, same chairs: said so
    assert client.get("/api/seats/3/view", headers={"X-Seat-Token": dan}).status_code == 200
    assert "keep_claims" not in session.export_lines()[0]         # the table's choice, not the game's log
    post(client, {**SCOREBOARD, "keep_claims": True})            # three seats: seat 3 goes
    assert wait_until(lambda: session.table.claims == {0: "phone"})
    assert client.get("/api/seats/0/view", headers={"X-Seat-Token": ann}).status_code == 200
    assert client.get("/api/seats/3/view", headers={"X-Seat-Token": dan}).status_code == 403


def test_keep_claims_must_be_a_boolean(client, session):
    post(client, THIRD_MAN)
    r = post(client, {**SCOREBOARD, "keep_claims": "yes"})
    assert r.status_code == 400 and "keep_claims" in r.json["error"]
    assert session.public()["game"] == "third-man"


def test_wrong_tokens_count_as_wrong_credentials(session):
    app = make_app(session, pin_block_s=5)
    c = app.test_client()
    post(c, THIRD_MAN)
    for _ in range(5):
        assert c.get("/api/seats/0/view", headers={"X-Seat-Token": "guess"}).status_code == 403
    assert c.get("/api/seats/0/view", headers={"X-Seat-Token": "guess"}).status_code == 429


# -- languages -------------------------------------------------------------------

@pytest.fixture
def shouting_french(monkeypatch):
    """A stand-in French catalogue (the real one is written later): upper case
    outside the {placeholders}."""
    import gettext
    import re

    from companion import i18n

    class Shout(gettext.NullTranslations):
        def gettext(self, message):
            return re.sub(r"[^{}]+(?=\{|$)|[^{}]+$", lambda m: m.group(0).upper(), message)
    real = i18n.translations
    monkeypatch.setattr(i18n, "translations", lambda lang: Shout() if lang == "fr" else real(lang))


def test_errors_follow_accept_language_and_lang(client, shouting_french):
    post(client, THIRD_MAN)
    r = post(client, {"type": "bid", "seat": 2, "card": 4}, headers={**pin_headers(), "Accept-Language": "fr-FR,fr;q=0.9"})
    assert r.json["error"] == "Chloé CANNOT BID YET: Ann LEADS THIS BID AND SHOWS A CARD FIRST"
    r = client.post("/api/actions?lang=fr", json={})
    assert r.json["error"].startswith("THIS NEEDS THE TABLE PIN")
    r = client.get("/api/nothing", headers={"Accept-Language": "de, en;q=0.5"})
    assert r.json["error"] == "nothing here: see docs/api.md for the routes"


# -- /api/events through the test client --------------------------------------------

def read_events(chunks, count):
    """Parse ``count`` events from an iterator of SSE chunks."""
    events, buf = [], b""
    while len(events) < count:
        buf += next(chunks)
        while b"\n\n" in buf:
            block, _, buf = buf.partition(b"\n\n")
            fields = dict(line.split(": ", 1) for line in block.decode().split("\n") if not line.startswith(":"))
            if "data" in fields:
                events.append((fields.get("event"), json.loads(fields["data"]), fields.get("id")))
    return events


def test_events_start_with_the_state_and_follow_every_change(client, session):
    r = client.get("/api/events", buffered=False)
    try:
        assert r.status_code == 200 and r.mimetype == "text/event-stream"
        chunks = iter(r.response)
        assert next(chunks) == b"retry: 2000\n\n"
        assert read_events(chunks, 2) == [("state", {"game": None}, "0"), ("seats", {"seats": []}, "0")]
        post(client, SCOREBOARD)
        post(client, {"type": "add", "seat": 2, "points": 7})
        events = read_events(chunks, 3)
        assert [e[0] for e in events] == ["state", "seats", "state"]
        assert events[2][1] == session.public() and events[2][1]["scores"] == [0, 0, 7]
        assert [e[2] for e in events] == ["1", "1", "2"]                # ids are session versions
    finally:
        r.close()
    assert client.application.extensions["companion"].events.streams == 0


def test_a_quiet_stream_sends_keep_alive_comments(session):
    app = make_app(session, keepalive_s=0.05)
    r = app.test_client().get("/api/events", buffered=False)
    chunks = iter(r.response)
    next(chunks), next(chunks)                     # retry, first state
    assert next(chunks) == b": keep-alive\n\n"
    r.close()


def test_head_on_the_event_stream_does_not_hold_a_stream(client):
    r = client.head("/api/events")
    assert r.status_code == 200 and r.mimetype == "text/event-stream"
    assert client.application.extensions["companion"].slots.open == 0


def test_the_stream_over_the_cap_is_a_clear_503(session):
    app = make_app(session, max_streams=2)
    c = app.test_client()
    open_ = [c.get("/api/events", buffered=False) for _ in range(2)]
    r = c.get("/api/events")
    assert r.status_code == 503
    assert r.json == {"error": "too many live connections (2): close a page or try again later"}
    assert r.headers["Retry-After"]
    open_[0].close()
    again = c.get("/api/events", buffered=False)
    assert again.status_code == 200
    again.close(), open_[1].close()
    assert app.extensions["companion"].slots.open == 0


# -- /dev and /oled.png ----------------------------------------------------------------

@pytest.fixture
def mock_box(session):
    box = FakeBox()
    app = make_app(session, box=box, mock=True, url="http://192.168.1.20:8000/")
    yield app.test_client(), box
    app.extensions["companion"].close()


def test_dev_page_shows_screen_buttons_qr_url_and_pin(mock_box):
    client, _box = mock_box
    r = client.get("/dev")
    assert r.status_code == 200
    page = r.get_data(as_text=True)
    for text in ('src="/dev/oled.png"', 'data-name="back"', "http://192.168.1.20:8000/", PIN, "<svg", 'EventSource("/dev/frames")'):
        assert text in page
    assert "setInterval" not in page and "setTimeout" not in page      # frames are pushed, not polled


def test_dev_buttons_press_and_hold_drive_the_box(mock_box):
    client, box = mock_box
    r = client.post("/dev/buttons/ok/press")
    assert r.status_code == 200
    assert r.json == {"button": "ok", "how": "press", "handled": True, "frame_version": 1}
    assert client.post("/dev/buttons/back/hold").json["frame_version"] == 2
    assert box.presses == [("ok", "press"), ("back", "hold")]


@pytest.mark.parametrize("path", ["/dev/buttons/OK/press", "/dev/buttons/left/press", "/dev/buttons/ok/tap"])
def test_dev_unknown_buttons_are_404_json(mock_box, path):
    client, box = mock_box
    r = client.post(path)
    assert r.status_code == 404 and "error" in r.json
    assert box.presses == []


def test_oled_png_is_the_frame_at_an_integer_multiple_of_128x64(mock_box):
    from PIL import Image

    client, _box = mock_box
    r = client.get("/oled.png")
    assert r.status_code == 200 and r.mimetype == "image/png"
    assert Image.open(io.BytesIO(r.data)).size == (512, 256)
    assert Image.open(io.BytesIO(client.get("/oled.png?scale=1").data)).size == (128, 64)
    assert client.get("/oled.png?scale=0").status_code == 400
    assert client.get("/oled.png?scale=x").status_code == 400


def test_oled_png_is_served_by_a_real_box_too(session):
    app = make_app(session, box=FakeBox(), mock=False)
    c = app.test_client()
    assert c.get("/oled.png").status_code == 200
    assert c.get("/dev").status_code == 404


def test_dev_frames_stream_pushes_each_new_frame(mock_box):
    client, box = mock_box
    r = client.get("/dev/frames", buffered=False)
    chunks = iter(r.response)
    next(chunks)
    assert read_events(chunks, 1) == [("frame", {"version": 0}, "0")]
    client.post("/dev/buttons/down/press")
    assert read_events(chunks, 1) == [("frame", {"version": 1}, "1")]
    r.close()


def test_dev_without_a_box_says_so(session):
    app = make_app(session, box=None, mock=True)
    c = app.test_client()
    assert "No box is running" in c.get("/dev").get_data(as_text=True)
    r = c.post("/dev/buttons/ok/press")
    assert r.status_code == 503 and "no box" in r.json["error"]


def test_the_placeholder_scoreboard_page_answers(client):
    r = client.get("/")
    assert r.status_code == 200 and b"/api/events" in r.data


def test_dev_drives_the_real_mock_box(session):
    from PIL import Image

    hardware = pytest.importorskip("hardware")
    from hardware.testing import box_config

    box = hardware.Box(session, box_config(), mock=True)
    box.start()
    app = make_app(session, box=box, mock=True)
    c = app.test_client()
    try:
        frames = c.get("/dev/frames", buffered=False)
        chunks = iter(frames.response)
        next(chunks)
        first = read_events(chunks, 1)[0][1]["version"]
        assert set(box.button_names) >= {"up", "down", "ok", "back"}
        page = c.get("/dev").get_data(as_text=True)
        assert all(f'data-name="{name}"' in page for name in box.button_names)
        before = c.get("/oled.png?scale=1").data
        r = c.post("/dev/buttons/ok/press")              # the idle screen's OK opens the menu
        assert r.status_code == 200 and r.json["handled"] is True
        assert r.json["frame_version"] == box.frame_version > first
        assert read_events(chunks, 1)[0][1]["version"] > first          # pushed, not polled
        assert c.get("/oled.png?scale=1").data != before
        assert Image.open(io.BytesIO(c.get("/oled.png?scale=2").data)).size == (256, 128)
        assert c.post("/dev/buttons/back/hold").status_code == 200
        frames.close()
    finally:
        app.extensions["companion"].close()
        box.close()
