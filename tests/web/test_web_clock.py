"""The turn clock from the phones: set with the PIN, a claimed seat ends its
own turn, pause and resume, the live clock on the event stream, bad
requests refused in one line (never a 500) — on a fake clock."""

from __future__ import annotations

import json

import pytest

from web_support import PIN, make_app

P = {"X-Table-Pin": PIN}


class FakeTime:
    t = 500.0

    def __call__(self):
        return self.t


@pytest.fixture
def table(session):
    fake = FakeTime()
    session.clock.now = fake
    app = make_app(session)
    yield session, app.test_client(), fake, app
    app.extensions["companion"].close()


def claim(client, seat):
    r = client.post(f"/api/seats/{seat}/claim", headers=P)
    assert r.status_code == 200, r.get_json()
    return {"X-Seat-Token": r.get_json()["token"]}


def test_set_end_turn_pause_resume(table):
    session, client, fake, _app = table
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Cat"]})
    assert client.get("/api/clock").get_json() == {"clock": None}
    assert client.post("/api/clock", json={"mode": "fischer", "bank_s": 300, "extra_s": 3}).status_code == 401
    r = client.post("/api/clock", json={"mode": "fischer", "bank_s": 300, "extra_s": 3}, headers=P)
    assert r.status_code == 200
    assert r.get_json()["clock"] == {"mode": "fischer", "extra": 3000, "banks": [300_000] * 3, "turn": 0,
                                     "running": True, "used_ms": 0, "free_ms": 0}
    ann, ben = claim(client, 0), claim(client, 1)
    fake.t += 20
    r = client.post("/api/clock/end-turn", headers=ben)        # not Ben's turn
    assert r.status_code == 409 and "\n" not in r.get_data(as_text=True).strip()
    assert session.public()["clock"]["turn"] == 0
    r = client.post("/api/clock/end-turn", headers=ann)
    assert r.status_code == 200 and r.get_json()["clock"]["banks"] == [283_000, 300_000, 300_000]
    fake.t += 4
    assert client.post("/api/clock/pause", headers=ann).get_json()["clock"]["running"] is False
    fake.t += 60
    live = client.get("/api/clock").get_json()["clock"]
    assert live["turn"] == 1 and live["used_ms"] == 4000 and not live["running"]
    assert client.post("/api/clock/resume", headers=P).get_json()["clock"]["running"] is True
    r = client.post("/api/clock/end-turn", headers=P)           # the table ends whoever runs
    assert r.get_json()["clock"]["turn"] == 2
    assert client.get("/api/state").get_json()["clock"]["banks"] == [283_000, 299_000, 300_000]


@pytest.mark.parametrize("body", [
    [], {"mode": "blitz", "bank_s": 60}, {"mode": "sudden"}, {"mode": "sudden", "bank_s": 0},
    {"mode": "sudden", "bank_s": 60, "extra_s": -1}, {"mode": "sudden", "bank_s": 60.5},
    {"mode": "sudden", "bank_s": 60, "x": 1}, {"mode": "fischer", "bank_s": 10**9},
])
def test_bad_bodies_are_one_line_400s(table, body):
    session, client, _fake, _app = table
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    r = client.post("/api/clock", json=body, headers=P)
    assert r.status_code == 400, r.get_data(as_text=True)
    assert "clock" not in session.public()


def test_no_game_and_a_game_of_its_own_turns_are_refused_plainly(table):
    session, client, _fake, _app = table
    assert client.post("/api/clock", json={"mode": "sudden", "bank_s": 60}, headers=P).status_code == 409
    assert client.post("/api/clock/end-turn", headers=P).status_code == 409
    session.submit({"type": "new_game", "game": "fight", "players": ["Ann", "Ben"]})
    assert client.post("/api/clock", json={"mode": "sudden", "bank_s": 60}, headers=P).status_code == 200
    ann = claim(client, 0)
    assert client.post("/api/clock/end-turn", headers=ann).status_code == 409


def test_the_stream_carries_the_live_clock(table):
    session, _client, fake, app = table
    session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]})
    c = app.extensions["companion"]
    seen = []
    c.events.publish = lambda messages: seen.extend(messages)
    session.clock_set("delay", 60_000, 2000)
    fake.t += 7
    session.clock_pause()
    events = [e for _v, data in seen for e in data.decode().split("\n\n") if "event: clock\n" in e]
    assert len(events) == 2
    last = json.loads(events[-1].split("data: ", 1)[1])
    assert last == {"mode": "delay", "extra": 2000, "banks": [60_000, 60_000], "turn": 0,
                    "running": False, "used_ms": 5000, "free_ms": 0}
    (_version, first), = c._table_snapshot()
    assert b"event: clock" in first
