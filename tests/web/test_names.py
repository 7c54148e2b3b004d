"""Names a table can tell apart (issue 21, point 5; companion/names.py).

As found: ``Ben\\u200b``, U+2060, U+00AD, U+034F, U+200D, U+3164 and a
Cyrillic look-alike "Bеn" were accepted on the box and at the hub: two seats
both read "Ben", one looked blank, and the league listed ``A\\u200bnn``
apart from ``Ann``.
"""

from __future__ import annotations

import json

import pytest

from companion.errors import IllegalActionError, InvalidActionError
from companion.names import looks, refuse_lookalikes, tidy
from companion.roster import Roster, clean_name
from hub_support import hub_db, hub_server, pg_server  # noqa: F401 (fixtures)
from web_support import make_app, pin_headers

CYRILLIC_BEN = "B\u0435n"          # Cyrillic small ie
INVISIBLE = ["\u200b", "\u2060", "\u00ad", "\u034f", "\u200d", "\u3164", "\u200c", "\ufe0f", "\U000e0041"]


def scoreboard(*players):
    return {"type": "new_game", "game": "scoreboard", "players": list(players)}


# -- the core rule -------------------------------------------------------------------

@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_invisible_and_format_characters_are_taken_out(char):
    assert tidy(f"Ben{char}") == "Ben"
    assert tidy(f"B{char}en") == "Ben"
    assert tidy(char) == ""


def test_a_name_is_nfc_and_its_spaces_are_plain():
    assert tidy("Chloe\u0301") == "Chlo\u00e9"
    assert tidy("  Ann\u00a0\u2003 Marie ") == "Ann Marie"


@pytest.mark.parametrize("a, b", [(CYRILLIC_BEN, "Ben"), ("J0", "Jo"), ("AI", "Al"), ("Ernrna", "Emma"),
                                  ("\u0412\u0435n", "Ben"), ("BEN", "B\u0415N")])
def test_look_alikes_have_one_skeleton(a, b):
    assert a != b and looks(a) == looks(b)


@pytest.mark.parametrize("a, b", [("Zoe", "Zoë"), ("Chloé", "Chloe"), ("Ann", "Anne"), ("Dan", "Dana"),
                                  ("Łukasz", "Lukasz"), ("François", "Francois")])
def test_names_that_differ_to_the_eye_stay_apart(a, b):
    assert looks(a) != looks(b)
    refuse_lookalikes([a, b])


def test_refusals_name_both_and_speak_french():
    with pytest.raises(InvalidActionError) as caught:
        refuse_lookalikes(["Ann", "Ben", CYRILLIC_BEN])
    assert caught.value.params == {"name": CYRILLIC_BEN, "other": "Ben"}
    from companion.i18n import translate_error

    assert "another player at this table" in translate_error(caught.value, "en")
    assert "un autre joueur de cette table" in translate_error(caught.value, "fr")
    with pytest.raises(InvalidActionError) as caught:
        refuse_lookalikes(["Ann", CYRILLIC_BEN], roster=["Ben", "Chloé"])
    assert "a player on the roster" in str(caught.value)
    refuse_lookalikes(["Ann", "ben"], roster=["Ben"])           # the same player, not a look-alike


# -- at the table: a new game -----------------------------------------------------------

def test_a_new_game_keeps_tidied_names(session):
    state = session.submit(scoreboard("Ann", "Ben\u200b", "Chlo\u00ad\u00e9"))
    assert state["players"] == ["Ann", "Ben", "Chloé"]
    assert json.loads(session.store.lines(session.game_id)[0])["players"] == ["Ann", "Ben", "Chloé"]


@pytest.mark.parametrize("second", ["Ben\u200b", "Ben\u2060", "B\u00aden", "Be\u034fn", "Be\u200dn", CYRILLIC_BEN, "ben"])
def test_two_seats_that_would_both_read_ben_are_refused(session, second):
    with pytest.raises(InvalidActionError):
        session.submit(scoreboard("Ann", "Ben", second))
    assert session.game_id is None and session.store.games() == []


def test_a_blank_looking_name_is_refused_as_empty(session):
    with pytest.raises(InvalidActionError) as caught:
        session.submit(scoreboard("Ann", "\u3164"))
    assert "must not be empty" in str(caught.value)


def test_a_name_that_looks_like_a_roster_players_is_refused(session):
    Roster(session).add("Ben")
    with pytest.raises(InvalidActionError) as caught:
        session.submit(scoreboard("Ann", CYRILLIC_BEN))
    assert "roster" in str(caught.value)
    session.submit(scoreboard("Ann", "ben"))                    # Ben himself, typed in lower case


# -- the roster --------------------------------------------------------------------------

def test_the_roster_keeps_tidied_names_and_refuses_look_alikes(session):
    roster = Roster(session)
    assert roster.add("Ben\u200b").name == "Ben"
    assert clean_name("A\u200bnn") == "Ann"
    with pytest.raises(IllegalActionError) as caught:
        roster.add(CYRILLIC_BEN)
    assert "looks like Ben" in str(caught.value)
    chloe = roster.add("Chloé")
    with pytest.raises(IllegalActionError):
        roster.rename(chloe.id, "BEN")                          # Ben's identity: already on the roster
    with pytest.raises(IllegalActionError):
        roster.rename(chloe.id, "B\u0415N")                     # looks like Ben
    with pytest.raises(InvalidActionError):
        roster.add("\u3164\u200b")
    assert sorted(roster.names()) == ["Ben", "Chloé"]


def test_the_phones_roster_route_says_it_in_both_languages(session):
    app = make_app(session)
    client = app.test_client()
    try:
        assert client.post("/api/players", json={"name": "Ben"}, headers=pin_headers()).status_code == 201
        english = client.post("/api/players", json={"name": CYRILLIC_BEN}, headers=pin_headers())
        french = client.post("/api/players?lang=fr", json={"name": CYRILLIC_BEN}, headers=pin_headers())
        assert english.status_code == french.status_code == 409
        assert "looks like Ben" in english.json["error"]
        assert "ressemble à Ben" in french.json["error"]
        r = client.post("/api/actions", json=scoreboard("Ann", "Ben", CYRILLIC_BEN), headers=pin_headers())
        assert r.status_code in (400, 409) and "looks like" in r.json["error"]
        assert client.get("/api/state").json == {"game": None}
    finally:
        app.extensions["companion"].close()


def test_an_imported_log_with_invisible_or_look_alike_names_is_refused(session):
    app = make_app(session)
    client = app.test_client()
    try:
        for players, words in ((["A\u200bnn", "Ben"], "invisible character U+200B"),
                               (["Ann", "Ben", CYRILLIC_BEN], "looks like")):
            body = json.dumps(scoreboard(*players)) + "\n"
            r = client.post("/api/history/import", data=body, headers=pin_headers(),
                            content_type="application/x-ndjson")
            assert r.status_code == 400 and r.json["error"].startswith("line 1: ") and words in r.json["error"]
        assert session.store.games() == []
    finally:
        app.extensions["companion"].close()


# -- the hub -------------------------------------------------------------------------------

def test_the_hub_refuses_look_alikes_in_a_tournament():
    pytest.importorskip("psycopg")
    pytest.importorskip("openskill")
    from hub.db import HubError
    from hub.tournament import _refuse_lookalikes

    with pytest.raises(HubError, match="looks like"):
        _refuse_lookalikes(["Ann", "Ben", CYRILLIC_BEN])
    _refuse_lookalikes(["Ann", "Ben", "Zoë"])


def test_emoji_sequences_keep_their_joiners():
    """A family or a red heart is one picture: its joiner and its emoji
    selector draw something, so they stay (between letters they go)."""
    for name in ("\U0001F469\u200d\U0001F469\u200d\U0001F467 Zoë", "\u2764\ufe0f Ann", "\U0001F44D\U0001F3FD Al"):
        assert tidy(name) == name
    assert tidy("Be\u200dn\ufe0f") == "Ben"


def test_the_league_lists_a_name_with_a_hidden_character_as_the_same_player(hub_server):
    """Found: the league listed ``A\\u200bnn`` apart from ``Ann``."""
    from hub_support import add_box, third_man_log
    from web_support import http

    key = add_box(hub_server.db, "b1")
    for number, first in enumerate(("Ann", "A\u200bnn"), start=1):
        log = third_man_log([first, "Ben", "Cat", "Dan"], [3, 2, 1, 0])
        status, _, body = http(hub_server.port, "POST", f"/api/box/games/{number}/lines",
                               {"from": 0, "lines": log, "finished": True}, {"Authorization": f"Bearer {key}"})
        assert status == 200, body
    status, _, body = http(hub_server.port, "GET", "/api/league?game=third-man")
    names = [p["name"] for p in body["players"]]
    assert sorted(names) == ["Ann", "Ben", "Cat", "Dan"], names


def test_a_roster_player_is_never_refused_for_an_older_look_alike_entry(session):
    """A roster written before this rule may hold both "Ben" and "Bеn":
    each of them can still sit down under their own name."""
    session.store.add_player("Ben")
    session.store.add_player(CYRILLIC_BEN)
    session.submit(scoreboard("Ann", "Ben"))
    session.submit(scoreboard("Ann", CYRILLIC_BEN))
    with pytest.raises(InvalidActionError):
        session.submit(scoreboard("Ann", "BEN", CYRILLIC_BEN))        # but not both at one table


def test_the_lookalike_table_is_kept_and_a_damaged_copy_is_built_again(tmp_path, monkeypatch):
    """The first start parses Unicode's data (0.9 MB) and keeps the table in
    the cache folder; later starts read the kept table, which is the same;
    a damaged kept file is built again, never trusted."""
    from companion import names

    monkeypatch.setenv("CACHE_DIRECTORY", str(tmp_path))
    built = names._build(names._confusables(names._confusables_file()))
    assert names._cached() == built
    (kept,) = tmp_path.glob("lookalikes-*.json")
    assert names._cached() == built             # read back from the kept file
    kept.write_text('["not a table"')
    assert names._cached() == built
    assert kept.read_text().startswith("{")
