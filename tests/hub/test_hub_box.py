"""The box and its club hub: the tournament table offered on the box's
screen, and the hub's status there.  A real hub on real PostgreSQL, a mock
box (gpiozero's MockFactory, luma's real classes) with a real store."""

from __future__ import annotations

import json
import time

import pytest

from box_support import make_box, mock_factory, shows  # noqa: F401 (fixtures)
from hub_support import add_box, free_port, hub_db, hub_server, pg_server, running_hub, third_man_log  # noqa: F401
from web_support import wait_until


@pytest.fixture(autouse=True)
def presses_act_at_once(monkeypatch):
    """An offer comes up by itself, and the box drops a press that follows
    such a move within a second (tests/box/test_box_moved_guard.py): these tests
    press at once, as a player who has read the offer would."""
    import hardware.ui.app as app_module

    monkeypatch.setattr(app_module, "MOVED_GUARD_S", 0.0)

P4 = ["Dan", "Chloé", "Ben", "Ann"]


def organiser(url, players, boxes):
    """The organiser creates a tournament and seats its first round (hub/tournament.py)."""
    from hub import tournament
    from hub.db import connect, migrate

    with connect(url) as conn:
        migrate(conn)
        tid = tournament.create(conn, "Autumn cup", "third-man", players, boxes)
        tournament.seat_round(conn, tid)
    return tid


def view(url, tid):
    from hub import tournament
    from hub.db import connect

    with connect(url) as conn:
        return tournament.view(conn, tid)


def joined_box(make_box, session, store, server, key):
    """A mock box joined to the hub the way ``companion run`` joins it
    (hub/box.py's ``attach`` on the box's web app)."""
    from hardware.testing import box_config
    from hub.box import attach
    from web.app import create_app

    config = box_config()
    box = make_box(config)
    app = create_app(session, box=box, config=config, pin="1234")
    stop = attach(app, store, session, {"hub_url": f"http://127.0.0.1:{server.port}", "hub_key": key})
    return box, app, stop


def frame(box) -> str:
    box.flush()
    return " | ".join(box.frame.texts)


def test_the_box_offers_the_tournament_table_and_its_result_goes_back(hub_server, make_box, session, store):
    key = add_box(hub_server.db, "t1")
    tid = organiser(hub_server.db, P4, ["t1"])
    seated = view(hub_server.db, tid)["rounds"][0]["tables"][0]["players"]
    assert sorted(seated) == sorted(P4)
    box, app, stop = joined_box(make_box, session, store, hub_server, key)
    try:
        feeder = box.app.hub
        assert feeder is not None
        assert wait_until(lambda: feeder.status()["offer"] is not None, 10), feeder.status()
        # The table is free: the offer comes up by itself, with the players in the hub's seat order.
        assert wait_until(lambda: "Round 1, table 1" in frame(box), 10), frame(box)
        shows(box, "Tournament", seated[0], "OK: start")
        # The phone's control page reads the same offer from GET /api/hub.
        answer = app.test_client().get("/api/hub").get_json()
        assert answer["configured"] and answer["reachable"] is True
        assert answer["offer"] == {"tournament": tid, "round": 1, "table": 1, "game": "third-man", "players": seated}
        assert "key" not in json.dumps(answer)

        box.press("ok")
        state = session.public()
        assert state["game"] == "third-man" and state["players"] == seated and not state["finished"]
        # Started: offered no more, neither on the phone nor in the box's New game.
        assert wait_until(lambda: feeder.status()["offer"] is None, 5)
        assert app.test_client().get("/api/hub").get_json()["offer"] is None
        box.press("back")           # the menu
        shows(box, "New game")
        box.press("down")
        box.press("ok")             # New game: the games, no tournament row first
        shows(box, "Pick the game")
        assert "Tournament" not in frame(box)
        box.press("back")
        box.press("back")
        assert not box.app.layers

        # The table plays its match (first lead: seat 0, the box's default).
        for action in third_man_log(seated, [3, 2, 1, 0])[1:]:
            session.submit(action, source="buttons")
        assert session.public()["finished"]
        assert wait_until(lambda: view(hub_server.db, tid)["rounds"][0]["tables"][0]["done"], 15)
        standings = {s["name"]: s["points"] for s in view(hub_server.db, tid)["standings"]}
        assert standings == {seated[0]: 3, seated[1]: 2, seated[2]: 1, seated[3]: 0}
        assert wait_until(lambda: feeder.status()["assignment"] is None, 10)
        assert "Round 1" not in frame(box)       # the finished game stays on the screen, no offer
    finally:
        stop()


def test_back_leaves_the_offer_for_later_in_new_game(hub_server, make_box, session, store):
    key = add_box(hub_server.db, "t1")
    organiser(hub_server.db, P4, ["t1"])
    box, app, stop = joined_box(make_box, session, store, hub_server, key)
    try:
        assert wait_until(lambda: "Round 1, table 1" in frame(box), 10), frame(box)
        box.press("back")           # later
        assert "Round 1" not in frame(box)
        time.sleep(0.2)
        assert "Round 1" not in frame(box)       # shown once only
        box.press("ok")             # the idle screen's menu
        box.press("ok")             # New game
        shows(box, "Tournament R1 · T1")
        box.press("ok")
        shows(box, "Round 1, table 1")
        box.press("ok")
        assert session.public()["players"] == box.app.hub.status()["assignment"]["players"]
    finally:
        stop()


def test_the_status_screen_follows_a_hub_that_stops(hub_db, make_box, session, store):
    from hub.box import show_on_box
    from hub.feeder import Feeder

    key = add_box(hub_db, "t1")
    port = free_port()
    box = make_box()
    feeder = Feeder(store.path, f"http://127.0.0.1:{port}", key, session,
                    min_backoff=0.05, max_backoff=0.5, rescan=0.5, timeout=2.0)
    try:
        with running_hub(hub_db, port):
            feeder.start()
            show_on_box(box, feeder)
            assert wait_until(lambda: feeder.status()["reachable"] is True, 10)
            assert wait_until(lambda: "Hub: OK · 0 to send" in frame(box), 5), frame(box)
            box.press("ok")                      # Menu → Hub
            box.press("up")                      # Language, then Hub just above it
            box.press("up")
            shows(box, "Hub")
            box.press("ok")
            shows(box, "Reachable", "Games to send: 0", f"127.0.0.1:{port}")
            box.press("back")
            box.press("back")
        # The hub is really stopped: the table plays a whole match meanwhile.
        for action in third_man_log(P4, [0, 3, 0, 0]):
            session.submit(action, source="buttons")
        assert wait_until(lambda: feeder.status()["reachable"] is False, 10)
        assert wait_until(lambda: feeder.status()["behind"]["games"] == 1, 10), feeder.status()
        since = time.strftime("%H:%M", time.localtime(feeder.status()["down_since"]))
        box.press("back")                        # the menu over the finished game
        box.press("up")
        box.press("up")
        box.press("ok")
        shows(box, "Not reachable", f"since {since}", "Games to send: 1")
        lines = feeder.status()["behind"]["lines"]
        assert lines > 0
        shows(box, f"Lines to send: {lines}")
        # Back again: the game goes up and the screen says so.
        with running_hub(hub_db, port):
            assert wait_until(lambda: feeder.status()["behind"]["games"] == 0, 20), feeder.status()
            assert wait_until(lambda: "Reachable" in frame(box), 5)
            shows(box, "Games to send: 0")
    finally:
        feeder.stop()


@pytest.mark.parametrize("language, words", [
    ("en", ("Hub: away · 12 to send", "Not reachable", "Games to send: 12", "Lines to send: 12345",
            "Tournament R12 · T10", "Round 12, table 10")),
    ("fr", ("Hub coupé · 12 à envoyer", "Injoignable", "Parties à envoyer\u00a0: 12", "Lignes à envoyer\u00a0: 12345",
            "Tournoi M12 · T10", "Manche 12, table 10"))])
def test_the_hub_screens_fit_in_both_languages(make_box, store, session, language, words):
    """Every hub text drawn whole (no "…") in English and French, with wide
    numbers: a real feeder (not started: its status set as its worker would)."""
    from hardware.testing import box_config
    from hub.box import show_on_box
    from hub.feeder import Feeder

    box = make_box(box_config(language=language))
    feeder = Feeder(store.path, "http://127.0.0.1:9", "key", session)
    feeder.reachable, feeder.down_since = False, time.time()
    feeder.behind_games, feeder.behind_lines = 12, 12345
    try:
        show_on_box(box, feeder)
        seen = [frame(box)]
        box.press("ok")
        box.press("up")
        box.press("up")
        box.press("ok")                      # Menu → Hub
        seen.append(frame(box))
        box.press("back")
        box.press("back")
        feeder.assignment = {"tournament": 1, "round": 12, "table": 10, "game": "third-man",
                             "players": ["Chloé", "Bérénice", "Maximilien", "Anne-Sophie"]}
        seen.append(frame(box))              # the offer comes up by itself
        box.press("back")
        box.press("ok")
        box.press("ok")                      # New game: the tournament row first
        seen.append(frame(box))
        drawn = " | ".join(seen)
        assert "…" not in drawn, drawn
        assert all(w in drawn for w in words), drawn
    finally:
        feeder.stop()
