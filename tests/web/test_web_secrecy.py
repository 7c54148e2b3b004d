"""Secrecy: no unrevealed value in any output that is not its owner's.

The scan is *differential*: the same entry is played on fresh tables that
differ only in the secret values entered, and every public output is
recorded — the state, the seat list, the pages, every event of a spectator's
stream, every answer to every request (refusals included), the other seats'
private views, the OLED mirror (the real mock box's frames, drawn after every request) and
every log line.  Until the reveal these
recordings must be identical byte for byte: then no output can depend on,
let alone show, a secret.  A direct search for the entered values backs it
up where the values are distinctive (the scoreboard's 9-digit numbers).
"""

from __future__ import annotations

import logging

import pytest

from web_support import (FakeBox, SSEClient, http, make_app, make_session, pin_headers,
                              running_server)

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]}
SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}
DIABOLO = {"type": "new_game", "game": "diabolo", "players": ["Ann", "Ben", "Chloé"]}


class Table:
    """A real server with one spectator stream, recording public outputs."""

    def __init__(self, port, box=None):
        self.port = port
        self.box = box
        self.public: list = []          # what anyone may see: must not depend on secrets
        self.tokens: dict[int, str] = {}

    def request(self, method, path, body=None, headers=None, owner=False):
        status, hdrs, reply = http(self.port, method, path, body, headers)
        if not owner:
            self.public.append((method, path, status, reply))
        if method == "POST" and self.box is not None:
            self.look_at_the_box()
        return status, reply

    def look_at_the_box(self):
        if hasattr(self.box, "flush"):
            self.box.flush()            # the change is drawn
        self.public.append(("oled", http(self.port, "GET", "/oled.png?scale=1")[2]))

    def claim_all(self, seats):
        for seat in range(seats):
            status, reply = self.request("POST", f"/api/seats/{seat}/claim", {"name": f"phone {seat}"},
                                         pin_headers(), owner=True)
            assert status == 200
            self.tokens[seat] = reply["token"]

    def as_seat(self, seat) -> dict:
        return {"X-Seat-Token": self.tokens[seat]}

    def look_around(self, not_owners):
        """Every public read, and the private views of seats that own no secret."""
        self.request("GET", "/api/state")
        self.request("GET", "/api/seats")
        self.request("GET", "/")
        self.request("GET", "/dev")
        self.request("GET", "/oled.png")
        for seat in not_owners:
            self.request("GET", f"/api/seats/{seat}/view", headers=self.as_seat(seat))


def drain(stream) -> list:
    events = []
    while True:
        try:
            events.append(stream.next_event(timeout=0.3))
        except TimeoutError:
            return events


def mock_box(session):
    """The real box in mock mode (hardware/), or a stand-in where it is missing."""
    try:
        from hardware import Box
        from hardware.testing import box_config
    except ImportError:
        return FakeBox()
    box = Box(session, box_config(), mock=True)
    box.start()
    return box


def play(tmp_path, caplog, new_game, script, not_owners):
    """Run ``script(table)`` on a fresh mock table; return its public recording."""
    caplog.clear()
    session = make_session(tmp_path)
    box = mock_box(session)
    app = make_app(session, box=box, mock=True, url="http://192.168.1.20:8000/")
    try:
        with running_server(app) as srv:
            spectator = SSEClient(srv.port)
            table = Table(srv.port, box)
            table.request("POST", "/api/actions", new_game, pin_headers())
            table.claim_all(len(new_game["players"]))
            script(table)
            table.look_around(not_owners)
            table.public.append(("events", drain(spectator)))
            spectator.close()
    finally:
        app.extensions["companion"].close()
        box.close()
        session.store.close()
    # waitress's "Task queue depth" warning says how busy the machine was, not
    # what was entered: it comes and goes with the CPU (a Pi, a loaded CI).
    logs = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name != "waitress.queue"]
    return table.public + [("logs", logs)]


def third_man_entry(x1, x2):
    """Ann leads 5 openly; Ben enters x1 from his phone, Chloé x2 through the
    PIN holder (as if from the box); then everyone pokes around."""
    def script(t: Table):
        assert t.request("POST", "/api/actions", {"type": "bid", "seat": 0, "card": 5}, t.as_seat(0))[0] == 200
        assert t.request("POST", "/api/actions", {"type": "bid", "seat": 1, "card": x1}, t.as_seat(1))[0] == 200
        assert t.request("POST", "/api/actions", {"type": "bid", "seat": 2, "card": x2}, pin_headers())[0] == 200
        # Refusals anyone could provoke: none may differ with the secrets.
        t.request("POST", "/api/actions", {"type": "bid", "seat": 1, "card": 4}, pin_headers())
        t.request("POST", "/api/actions", {"type": "bid", "seat": 1, "card": 4}, t.as_seat(3))
        t.request("POST", "/api/actions", {"type": "bid", "seat": 2, "card": x2}, t.as_seat(2))
        t.request("POST", "/api/actions", {"type": "bid", "seat": 0, "card": 5}, pin_headers())
        t.request("GET", "/api/seats/1/view", headers=t.as_seat(3))
        t.request("GET", "/api/seats/2/view", headers=pin_headers())
        t.request("POST", "/api/actions", {"type": "undo"}, t.as_seat(1))
    return script


def test_third_man_no_public_output_depends_on_the_secret_cards(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    runs = [play(tmp_path / f"run{n}", caplog, THIRD_MAN, third_man_entry(x1, x2), not_owners=(0, 3))
            for n, (x1, x2) in enumerate([(3, 8), (8, 3), (0, 9)])]
    assert len(runs[0]) >= 18
    for run in runs[1:]:
        for mine, theirs in zip(runs[0], run):
            assert mine == theirs
        assert len(run) == len(runs[0])


def third_man_box_entry(ups):
    """Issue 13, finding 4 and 1: every seat is claimed by a phone right after
    new_game (claims anyone could make with the PIN off the box); Ann shows
    her card and Ben locks his on the box's buttons, ``ups`` cursor moves from
    his lowest card.  Ben's seat token is then just another phone."""
    def script(t: Table):
        box = t.box
        for _ in range(4):
            box.press("ok")                       # the box shows each claim: keep
        t.look_at_the_box()
        box.press("ok")                           # the track → Ann's hand
        box.press("ok")                           # Ann shows her lowest card
        t.look_at_the_box()
        box.press("ok")                           # Ben has the box
        assert box.app.controller.mode == "pick" and box.app.controller.seat == 1
        t.look_at_the_box()
        mirror = t.public[-1]
        for _ in range(ups):
            box.press("up")
            t.look_at_the_box()
            assert t.public.pop() == mirror, "the mirror followed Ben's cursor"
        box.press("ok")                           # Ben locks
        assert box.app.public["pending"]["entered"] == [0, 1]
        t.look_at_the_box()
        t.request("GET", "/api/seats/1/view", headers=t.as_seat(1))
        t.request("GET", "/api/seats/2/view", headers=t.as_seat(2))
        t.request("POST", "/api/actions", {"type": "bid", "seat": 1, "card": 9}, t.as_seat(1))
        t.request("POST", "/api/actions", {"type": "bid", "seat": 1, "card": 9}, pin_headers())
    return script


def test_third_man_a_card_locked_on_the_box_reaches_no_phone(tmp_path, caplog):
    pytest.importorskip("hardware")
    caplog.set_level(logging.DEBUG)
    runs = [play(tmp_path / f"run{ups}", caplog, THIRD_MAN, third_man_box_entry(ups), not_owners=(0, 2, 3))
            for ups in (0, 1, 4)]
    for run in runs[1:]:
        assert run == runs[0]


def test_third_man_the_owner_sees_its_card_and_everyone_sees_the_reveal(tmp_path):
    session = make_session(tmp_path)
    app = make_app(session)
    with running_server(app) as srv:
        t = Table(srv.port)
        t.request("POST", "/api/actions", THIRD_MAN, pin_headers())
        t.claim_all(4)
        spectator = SSEClient(srv.port)
        t.request("POST", "/api/actions", {"type": "bid", "seat": 0, "card": 5}, pin_headers())
        t.request("POST", "/api/actions", {"type": "bid", "seat": 1, "card": 7}, t.as_seat(1))
        assert t.request("GET", "/api/seats/1/view", headers=t.as_seat(1), owner=True)[1]["locked"] == 7
        t.request("POST", "/api/actions", {"type": "bid", "seat": 2, "card": 2}, t.as_seat(2))
        t.request("POST", "/api/actions", {"type": "bid", "seat": 3, "card": 9}, t.as_seat(3))
        states = [data for event, data, _ in drain(spectator) if event == "state"]
        assert states[-1]["last"]["cards"] == [5, 7, 2, 9]
        spectator.close()
    app.extensions["companion"].close()


SECRETS_A = (987654321, 918273645)
SECRETS_B = (123456789, 192837465)


def scoreboard_entry(a, b):
    def script(t: Table):
        t.request("POST", "/api/actions", {"type": "add", "seat": 2, "points": 4}, pin_headers())
        assert t.request("POST", "/api/actions", {"type": "secret", "seat": 0, "value": a}, t.as_seat(0))[0] == 200
        assert t.request("POST", "/api/actions", {"type": "secret", "seat": 1, "value": b}, pin_headers())[0] == 200
        t.request("POST", "/api/actions", {"type": "secret", "seat": 0, "value": a}, pin_headers())
        t.request("POST", "/api/actions", {"type": "secret", "seat": 1, "value": b}, t.as_seat(2))
        t.request("GET", "/api/seats/0/view", headers=t.as_seat(1))
        t.request("POST", "/api/actions", {"type": "add", "seat": 0, "points": a}, t.as_seat(0))
    return script


def test_scoreboard_no_public_output_depends_on_or_shows_the_secret_numbers(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    one = play(tmp_path / "a", caplog, SCOREBOARD, scoreboard_entry(*SECRETS_A), not_owners=(2,))
    two = play(tmp_path / "b", caplog, SCOREBOARD, scoreboard_entry(*SECRETS_B), not_owners=(2,))
    assert one == two
    text = repr(one)
    for value in SECRETS_A:
        assert str(value) not in text
    assert "entered" in text


def diabolo_entry(ann_plays, ben_plays):
    def script(t: Table):
        assert t.request("POST", "/api/actions", {"type": "double", "seat": 0, "color": "red", "play": ann_plays},
                         t.as_seat(0))[0] == 200
        assert t.request("POST", "/api/actions", {"type": "double", "seat": 1, "color": "red", "play": ben_plays},
                         pin_headers())[0] == 200
        t.request("POST", "/api/actions", {"type": "double", "seat": 0, "color": "red", "play": ann_plays}, pin_headers())
        t.request("POST", "/api/actions", {"type": "double", "seat": 1, "color": "red", "play": True}, t.as_seat(2))
        t.request("GET", "/api/seats/1/view", headers=t.as_seat(2))
    return script


def test_diabolo_no_public_output_depends_on_the_double_decisions(tmp_path, caplog):
    pytest.importorskip("companion.games.diabolo")
    caplog.set_level(logging.DEBUG)
    runs = [play(tmp_path / f"run{n}", caplog, DIABOLO, diabolo_entry(a, b), not_owners=(2,))
            for n, (a, b) in enumerate([(True, False), (False, True), (True, True)])]
    assert runs[0] == runs[1] == runs[2]


@pytest.mark.parametrize("game, action", [
    (THIRD_MAN, {"type": "bid", "seat": 1, "card": 6}),
    (SCOREBOARD, {"type": "secret", "seat": 1, "value": 555}),
    (DIABOLO, {"type": "double", "seat": 1, "color": "blue", "play": True}),
])
def test_a_secret_entry_changes_the_public_state_only_by_who_entered(tmp_path, game, action):
    session = make_session(tmp_path)
    app = make_app(session)
    client = app.test_client()
    client.post("/api/actions", json=game, headers=pin_headers())
    if game["game"] == "third-man":
        client.post("/api/actions", json={"type": "bid", "seat": 0, "card": 1}, headers=pin_headers())
    before = client.get("/api/state").json
    after = client.post("/api/actions", json=action, headers=pin_headers()).json
    changed = {k for k in after if after[k] != before[k]}
    assert changed == {"third-man": {"pending"}, "scoreboard": {"entered"}, "diabolo": {"decided", "colors"}}[game["game"]]
    app.extensions["companion"].close()
