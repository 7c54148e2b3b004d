"""Phones' seats and the box (issue 13, finding 4).

A secret entered on the buttons is the box's until the reveal: a seat token
never reads it, even one claimed before the entry (the PIN is on the box for
all to read).  Claims are shown on the box (OK keeps; releasing is a
choice of its own, DOWN then OK; BACK keeps and leaves, as BACK never
releases), the menu releases them later, and a claim ends with its game
unless the table keeps it on purpose.  Real parts: the mock box, the Flask app.
"""

from __future__ import annotations

import pytest

from box_support import make_box, mock_factory, shows, world  # noqa: F401 (fixtures)
from web_support import pin_headers

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}
SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}


def claim(client, seat, name=None):
    r = client.post(f"/api/seats/{seat}/claim", json={"name": name} if name else None, headers=pin_headers())
    assert r.status_code == 200, r.json
    return r.json["token"]


def drawn(box) -> str:
    return " ".join(box.frame.texts)


def bens_card_on_the_box(session, box, client, ups):
    """Finding 4 as found: a phone claims seat 1 right after new_game; Ann
    shows a card and Ben locks one on the buttons.  Returns Ben's token."""
    assert client.post("/api/actions", json=THIRD_MAN, headers=pin_headers()).status_code == 200
    token = claim(client, 1, "a phone")
    box.flush()
    assert "Phone claim" in drawn(box)
    box.press("ok")                                   # keep the claim
    box.press("ok")                                   # the track → Ann's hand
    box.press("ok")                                   # Ann shows her lowest card
    box.press("ok")                                   # Ben has the box
    for _ in range(ups):
        box.press("up")
    box.press("ok")                                   # Ben locks
    assert session.public()["pending"]["entered"] == [0, 1]
    return token


def test_an_early_claim_does_not_read_a_card_locked_on_the_box(world):
    views = []
    for name, ups in (("a", 0), ("b", 2)):
        session, box, client = world(name)
        token = bens_card_on_the_box(session, box, client, ups)
        r = client.get("/api/seats/1/view", headers={"X-Seat-Token": token})
        assert r.status_code == 200
        assert r.json["locked"] is None and r.json["entered_at_table"] is True
        views.append(r.data)
    assert views[0] == views[1], "the seat's view depends on the card locked on the box"


def test_the_box_entry_is_revealed_to_everyone_at_the_reveal(world):
    session, box, client = world()
    token = bens_card_on_the_box(session, box, client, 0)
    for seat, card in ((2, 3), (3, 4)):
        client.post("/api/actions", json={"type": "bid", "seat": seat, "card": card}, headers=pin_headers())
    view = client.get("/api/seats/1/view", headers={"X-Seat-Token": token}).json
    assert "entered_at_table" not in view and view["last"]["cards"][1] == session.public()["last"]["cards"][1]


def test_an_entry_taken_back_and_made_on_the_phone_is_the_phones(world):
    session, box, client = world()
    token = bens_card_on_the_box(session, box, client, 0)
    assert client.post("/api/actions", json={"type": "undo"}, headers=pin_headers()).status_code == 200
    hand = client.get("/api/seats/1/view", headers={"X-Seat-Token": token}).json["hand"]
    r = client.post("/api/actions", json={"type": "bid", "seat": 1, "card": hand[-1]},
                    headers={"X-Seat-Token": token})
    assert r.status_code == 200
    view = client.get("/api/seats/1/view", headers={"X-Seat-Token": token}).json
    assert view["locked"] == hand[-1] and "entered_at_table" not in view


def test_a_scoreboard_number_entered_on_the_box_is_not_the_phones(world):
    session, box, client = world()
    client.post("/api/actions", json=SCOREBOARD, headers=pin_headers())
    token = claim(client, 0)
    box.flush()
    box.press("ok")                                   # keep the claim
    for key in ("down", "down", "down", "ok", "ok", "up", "up", "ok"):   # secret round, Ann enters 2
        box.press(key)
    assert session.public()["entered"] == [0]
    view = client.get("/api/seats/0/view", headers={"X-Seat-Token": token}).json
    assert view["secret"] is None and view["entered_at_table"] is True
    assert session.private(0)["secret"] == {"value": 2}, "the box itself still knows it"


# -- claims on the box ------------------------------------------------------------------

def test_a_claim_is_shown_on_the_box_and_released_only_on_purpose(world):
    session, box, client = world()
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    token = claim(client, 1, "Zoë's phone")
    box.flush()
    shows(box, "Phone claim")
    assert "Seat 2 · Ben Zoë's phone Keep Release" in drawn(box)
    assert box.mirror.texts == box.frame.texts, "a claim is public: the mirror shows it too"
    box.press("down")                                 # the bar on "Release"...
    assert session.table.claims == {1: "Zoë's phone"}, "...which nothing does before OK"
    box.press("ok")                                   # not ours: release
    assert session.table.claims == {}
    assert client.get("/api/seats").json["seats"][1]["claimed"] is False
    assert client.get("/api/seats/1/view", headers={"X-Seat-Token": token}).status_code == 403
    box.press("ok")                                   # closes the "released" message
    shows(box, "Round 1")


def test_a_claim_covers_a_pick_and_closes_it(world):
    session, box, client = world()
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    box.flush()
    for key in ("ok", "ok", "ok"):                    # Ann shows; Ben has the box
        box.press(key)
    assert box.app.controller.mode == "pick"
    claim(client, 2)
    box.flush()
    shows(box, "Phone claim")
    box.press("ok")
    assert box.app.controller.mode == "pass", "the pick must not come back by itself"


def test_the_menu_releases_a_claim(world):
    session, box, client = world()
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    token = claim(client, 2, "Chloé's phone")
    box.flush()
    box.press("ok")                                   # keep it for now
    box.press("back")                                 # the menu
    while box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] != "Phone seats":
        box.press("down")
    box.press("ok")
    shows(box, "Phone seats", "3. Chloé", "Chloé's p")        # the label, cut to fit
    for _ in range(2):
        box.press("down")
    box.press("ok")
    assert session.table.claims == {}
    assert client.get("/api/seats/2/view", headers={"X-Seat-Token": token}).status_code == 403


def _new_game_from_the_menu(box, keep: bool):
    box.press("back")                                 # the menu
    while box.app.layers[-1].rows()[box.app.layers[-1].cursor][0] != "New game":
        box.press("down")
    box.press("ok")                                   # the game picker, on the current game
    box.press("ok")                                   # its set-up
    setup = box.app.layers[-1]
    if keep:
        while setup.rows()[setup.cursor][0] != "Phone seats":
            box.press("down")
        assert setup.rows()[setup.cursor][1] == "release", "release unless the table says so"
        box.press("ok")
        assert setup.rows()[setup.cursor][1] == "keep"
        while setup.cursor != 0:
            box.press("up")
    box.press("ok")                                   # Start


@pytest.mark.parametrize("keep", [False, True])
def test_play_again_on_the_box_keeps_claims_only_when_asked(world, keep):
    session, box, client = world()
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    token = claim(client, 3)
    box.flush()
    box.press("ok")
    first = session.game_id
    _new_game_from_the_menu(box, keep)
    assert session.game_id != first
    assert (session.table.claims == {3: "phone"}) is keep
    status = client.get("/api/seats/3/view", headers={"X-Seat-Token": token}).status_code
    assert status == (200 if keep else 403)
    assert "keep_claims" not in session.export_lines()[0]


def test_resuming_another_game_ends_the_claims(world):
    session, box, client = world()
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    first = session.game_id
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    token = claim(client, 0)
    session.resume(first)
    assert session.table.claims == {}
    assert client.get("/api/seats/0/view", headers={"X-Seat-Token": token}).status_code == 403


@pytest.mark.parametrize("keys", [["back"], ["down", "back"], ["down", "up", "ok"], ["up", "up", "ok"]])
def test_back_never_releases_a_claim_and_the_screen_starts_on_keep(world, keys):
    """BACK opens the menu everywhere else: on a claim it keeps the claim and
    leaves, wherever the bar is; the next claim's screen starts on "Keep"."""
    session, box, client = world()
    client.post("/api/actions", json=THIRD_MAN, headers=pin_headers())
    token = claim(client, 1, "Zoë's phone")
    box.flush()
    shows(box, "Phone claim")
    for key in keys:
        box.press(key)
    assert session.table.claims == {1: "Zoë's phone"}
    assert client.get("/api/seats/1/view", headers={"X-Seat-Token": token}).status_code == 200
    assert "Phone claim" not in drawn(box), "answered: the screen is gone"
    claim(client, 2, "Chloé's phone")
    box.flush()
    assert box.app.claim_release is False
    box.press("ok")
    assert session.table.claims == {1: "Zoë's phone", 2: "Chloé's phone"}
