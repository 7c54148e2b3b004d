"""The OLED mirror and the mock box's /dev page (issue 13, finding 1 and 7).

``GET /oled.png`` is for anyone on the network: it must never show a seat
choosing a secret (the cursor over a hand) nor the PIN.  ``/dev`` is the
mock box itself: it shows everything, but only to this computer, and its
buttons refuse another site's page.  Real parts throughout: the mock box on
gpiozero's MockFactory, luma's dummy panel, the Flask app.
"""

from __future__ import annotations

import pytest

from box_support import make_box, mock_factory, world  # noqa: F401 (fixtures)
from web_support import PIN, FakeBox, make_app

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}
SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}


@pytest.fixture
def table(session, make_box):
    """(box, client): a started mock box and its web app, as `companion run --mock`."""
    box = make_box()
    app = make_app(session, box=box, mock=True, url="http://192.168.1.20:8000/")
    yield box, app.test_client()
    app.extensions["companion"].close()


def mirror(client) -> bytes:
    r = client.get("/oled.png?scale=1")
    assert r.status_code == 200
    return r.data


def panel(client) -> bytes:
    r = client.get("/dev/oled.png?scale=1")
    assert r.status_code == 200
    return r.data


def to_bens_pick(box, session):
    """Third Man: Ann shows her lowest card on the box; the box is handed to Ben."""
    session.submit(THIRD_MAN)
    box.flush()
    box.press("ok")                   # the track → the lead's hand
    box.press("ok")                   # Ann shows a card (public)
    assert box.app.controller.mode == "pass"


# -- finding 1: the mirror showed the card being picked ----------------------------------

def test_the_mirror_does_not_follow_bens_cursor_over_his_hand(table, session):
    box, client = table
    to_bens_pick(box, session)
    seen_mirror, seen_panel = {mirror(client)}, {panel(client)}
    box.press("ok")                   # Ben has the box: his hand, the cursor on his lowest card
    assert box.frame.private
    for key in ("up", "up", "down", "up", "up"):
        seen_mirror.add(mirror(client))
        seen_panel.add(panel(client))
        box.press(key)
    assert len(seen_panel) >= 4, "the panel shows the cursor moving (the test sees the moves)"
    assert len(seen_mirror) == 1, "the mirror must not change while Ben chooses"
    assert "is choosing\u2026" in box.mirror.texts and "Ben" in box.mirror.texts


@pytest.mark.parametrize("moves", [1, 3])
def test_the_mirror_is_the_same_whatever_card_ben_locks(world, moves):
    """Two tables that differ only in Ben's card: the mirror all along the
    pick and after the lock (Chloé's turn) is the same picture, changed as
    many times."""
    pictures = []
    for name, ups in (("a", 0), ("b", moves)):
        sess, box, client = world(name)
        to_bens_pick(box, sess)
        box.press("ok")
        during = {mirror(client)}
        for _ in range(ups):
            box.press("up")
            during.add(mirror(client))
        box.press("ok")                                   # Ben locks
        assert sess.public()["pending"]["entered"] == [0, 1]
        pictures.append((during, mirror(client), box.mirror.version))
    assert pictures[0] == pictures[1]
    assert len(pictures[0][0]) == 1


def test_the_mirrors_announcements_say_nothing_while_a_secret_is_chosen(table, session):
    box, client = table
    comp = client.application.extensions["companion"]
    published = []
    unsubscribe = box.subscribe_frames(published.append, mirror=True)
    dev_published = []
    comp.dev_frames.publish = lambda items, _orig=comp.dev_frames.publish: (dev_published.append(items), _orig(items))
    to_bens_pick(box, session)
    box.press("ok")
    published.clear(), dev_published.clear()
    for key in ("up", "up", "down"):
        box.press(key)
    unsubscribe()
    assert len(dev_published) == 3, "the /dev stream follows the panel"
    assert published == [], "the mirror announced cursor moves"
    assert not hasattr(comp, "frames"), "no public frame stream (docs/security.md)"


def test_a_scoreboard_secret_number_never_reaches_the_mirror(table, session):
    box, client = table
    session.submit(SCOREBOARD)
    box.flush()
    for _ in range(3):
        box.press("down")             # to "Secret round"
    box.press("ok")                   # pass the box to Ann
    before = mirror(client)
    box.press("ok")
    for _ in range(4):
        box.press("up")
        assert mirror(client) == before
    assert "4" in box.frame.texts and "4" not in box.mirror.texts


# -- finding 1: the mirror handed out the PIN ---------------------------------------------

def _pin_pictures(session, make_box, pin):
    box = make_box()
    box.show_join("http://192.168.1.20:8000/", pin)
    box.flush()
    idle = (box.frame_png(1, mirror=True), box.frame_png(1, mirror=False))
    box.press("ok")                                   # the menu
    while box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] != "Phones (QR code)":
        box.press("down")
    box.press("ok")                                   # the QR code and the PIN
    join = (box.frame_png(1, mirror=True), box.frame_png(1, mirror=False))
    box.close()
    return idle, join


def test_the_mirror_never_shows_the_pin(session, make_box):
    (idle_a, join_a), (idle_b, join_b) = (_pin_pictures(session, make_box, pin) for pin in ("1234", "9876"))
    assert idle_a[1] != idle_b[1] and join_a[1] != join_b[1], "the box itself shows the PIN"
    assert idle_a[0] == idle_b[0], "the idle screen's mirror depends on the PIN"
    assert join_a[0] == join_b[0], "the QR screen's mirror depends on the PIN"


def test_the_pin_is_not_in_the_mirrors_texts(table):
    box, client = table
    box.show_join("http://192.168.1.20:8000/", PIN)
    box.flush()
    assert any(PIN in t for t in box.frame.texts)
    assert not any(PIN in t for t in box.mirror.texts)
    assert mirror(client) != panel(client)


# -- finding 7: /dev was open to the network and to other sites --------------------------

DEV_ROUTES = [("GET", "/dev"), ("GET", "/dev/frames"), ("GET", "/dev/oled.png"), ("POST", "/dev/buttons/ok/press")]


@pytest.mark.parametrize("method,path", DEV_ROUTES)
def test_dev_answers_only_to_loopback(session, method, path):
    box = FakeBox()
    app = make_app(session, box=box, mock=True)
    client = app.test_client()
    try:
        r = client.open(path, method=method, environ_base={"REMOTE_ADDR": "192.168.1.30"})
        assert r.status_code == 403 and "--dev-anywhere" in r.json["error"]
        assert box.presses == []
        r = client.open(path, method=method, environ_base={"REMOTE_ADDR": "::ffff:127.0.0.1"}, buffered=False)
        assert r.status_code == 200
        r.close()
    finally:
        app.extensions["companion"].close()


@pytest.mark.parametrize("method,path", DEV_ROUTES)
def test_dev_anywhere_opens_dev_to_the_network(session, method, path):
    app = make_app(session, box=FakeBox(), mock=True, dev_anywhere=True)
    try:
        r = app.test_client().open(path, method=method, environ_base={"REMOTE_ADDR": "192.168.1.30"},
                                   buffered=False)
        assert r.status_code == 200
        r.close()
    finally:
        app.extensions["companion"].close()


def test_the_mirror_answers_everyone(session):
    app = make_app(session, box=FakeBox(), mock=True)
    r = app.test_client().get("/oled.png", environ_base={"REMOTE_ADDR": "192.168.1.30"})
    assert r.status_code == 200 and r.mimetype == "image/png"
    app.extensions["companion"].close()


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},                            # a form POST from another site
    {"Origin": "http://localhost:9999"},                          # another port is another origin
    {"Origin": "null"},                                           # a sandboxed page, a data: URL
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site", "Origin": "http://localhost"},
])
def test_dev_buttons_refuse_cross_site_requests(session, headers):
    box = FakeBox()
    app = make_app(session, box=box, mock=True)
    try:
        r = app.test_client().post("/dev/buttons/ok/press", headers=headers,
                                   data={"x": "1"}, content_type="application/x-www-form-urlencoded")
        assert r.status_code == 403 and "another site" in r.json["error"]
        assert box.presses == []
    finally:
        app.extensions["companion"].close()


def test_dev_buttons_accept_their_own_page(session):
    box = FakeBox()
    app = make_app(session, box=box, mock=True)
    try:
        r = app.test_client().post("/dev/buttons/ok/press",
                                   headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"})
        assert r.status_code == 200 and box.presses == [("ok", "press")]
    finally:
        app.extensions["companion"].close()


def test_the_dev_page_reads_frames_from_dev_routes_only(session):
    app = make_app(session, box=FakeBox(), mock=True)
    page = app.test_client().get("/dev").get_data(as_text=True)
    assert '"/dev/oled.png' in page and '"/oled.png' not in page
    app.extensions["companion"].close()


def test_a_scale_that_is_not_ascii_digits_is_a_400(session):
    app = make_app(session, box=FakeBox(), mock=True)
    for path in ("/oled.png?scale=\u00b2", "/dev/oled.png?scale=\u0663"):
        r = app.test_client().get(path)
        assert r.status_code == 400 and "scale" in r.json["error"]
    app.extensions["companion"].close()


def test_run_has_a_dev_anywhere_flag():
    from appliance.cli import build_parser

    assert build_parser().parse_args(["run", "--mock", "--dev-anywhere"]).dev_anywhere is True
    assert build_parser().parse_args(["run", "--mock"]).dev_anywhere is False
