"""Export (JSON Lines, CSV) and import (web and `companion import`) of stored games."""

from __future__ import annotations

import csv
import io
import json
import subprocess

import pytest

from companion.exports import csv_text, import_log, scored_rows
from companion.history import public_steps
from companion.store import Store
from companion.timeline import ReplayError, replay
from test_history_web import THIRD_MAN, Table, add, bid, scoreboard
from web_support import pin_headers

SECRET = {"type": "secret", "seat": 0, "value": 5}


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path / "data")
    yield t
    t.close()


def jsonl(*actions) -> bytes:
    return "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in actions).encode()


def post_log(table, data, headers=None):
    return table.client.post("/api/history/import", data=data,
                             headers=pin_headers() if headers is None else headers,
                             content_type="application/x-ndjson")


def count_games(table):
    with table.session.lock:
        return len(table.store.games())


def rows(text):
    return list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))


# -- CSV: one row per scored step ---------------------------------------------------------

def test_a_scored_step_is_the_first_and_any_step_after_which_scores_changed():
    log = [json.dumps(a) for a in (scoreboard(), add(0, 3), SECRET, {"type": "token", "seat": 1, "delta": 1},
                                   add(1, 2), {"type": "undo"}, add(0, 0))]
    assert scored_rows(public_steps(log)) == [
        [1, "new_game", 0, 0],
        [2, "add", 3, 0],
        [5, "add", 3, 2],
        [6, "undo", 3, 0],        # taking points back changes the scores: a scored step
    ]


def test_the_csv_names_the_seats_and_is_utf8_with_a_bom(table):
    gid = table.play(scoreboard(("Chloé", "Zoë")), add(1, -4))
    r = table.client.get(f"/api/history/{gid}/export.csv")
    assert r.status_code == 200
    assert r.mimetype == "text/csv" and r.headers["Cache-Control"] == "no-store"
    assert f'filename="game-{gid:06d}-scoreboard.csv"' in r.headers["Content-Disposition"]
    assert r.data.startswith("\ufeff".encode())
    assert rows(r.data.decode()) == [["step", "action", "Chloé", "Zoë"], ["1", "new_game", "0", "0"],
                                     ["2", "add", "0", "-4"]]


def test_a_name_that_looks_like_a_formula_stays_text_in_the_csv():
    log = [json.dumps(scoreboard(("=1+1", "@cmd")))]
    assert rows(csv_text(public_steps(log)))[0] == ["step", "action", "'=1+1", "'@cmd"]


def test_the_csv_of_a_bid_under_way_has_no_row_for_the_secret_entries(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3), bid(1, 8))
    assert rows(table.client.get(f"/api/history/{gid}/export.csv").data.decode())[1:] == \
        [["1", "new_game", "0", "0", "0", "0"]]
    table.play(bid(3, 1))                      # the reveal scores the bid
    assert rows(table.client.get(f"/api/history/{gid}/export.csv").data.decode())[2] == \
        ["5", "bid", "-6", "2", "6", "0"]         # 8 first +2, 6 second -6, 3 third +6


# -- JSON Lines export --------------------------------------------------------------------------

def test_the_public_export_redacts_pending_secrets_and_says_so(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3))
    r = table.client.get(f"/api/history/{gid}/export.jsonl")
    assert r.status_code == 200 and r.mimetype == "application/x-ndjson"
    assert r.headers["X-Companion-Redacted"] == "1"
    assert f'filename="game-{gid:06d}-third-man.jsonl"' in r.headers["Content-Disposition"]
    lines = [json.loads(line) for line in r.data.decode().splitlines()]
    assert lines == [THIRD_MAN, bid(0, 6), {"type": "bid", "seat": 2, "card": None}]


def test_the_pin_exports_the_log_exactly_as_stored(table):
    # between bids: no secret is pending (mid-bid the PIN gets 409, see test_history_web)
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3), bid(1, 8), bid(3, 1))
    r = table.client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers())
    assert r.headers["X-Companion-Redacted"] == "0"
    assert r.data.decode().splitlines() == table.store.lines(gid)


def test_a_wrong_pin_gets_no_export_at_all(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3))
    r = table.client.get(f"/api/history/{gid}/export.jsonl", headers={"X-Table-Pin": "0000"})
    assert r.status_code == 403 and set(r.json) == {"error"}


def test_a_finished_game_exports_whole_without_the_pin(table):
    gid = table.play(scoreboard(target=5), SECRET, {"type": "secret", "seat": 1, "value": 9}, add(1, 5))
    r = table.client.get(f"/api/history/{gid}/export.jsonl")
    assert r.data.decode().splitlines() == table.store.lines(gid)      # every secret was revealed


# -- import: round trips -------------------------------------------------------------------------

def test_export_with_the_pin_then_import_gives_the_same_public_state(table):
    gid = table.play(THIRD_MAN, bid(0, 6), bid(2, 3), bid(1, 8), bid(3, 1), bid(2, 9))
    log = table.client.get(f"/api/history/{gid}/export.jsonl", headers=pin_headers()).data
    r = post_log(table, log)
    assert r.status_code == 200, r.json
    new = r.json["id"]
    assert new != gid and r.json["finished"] is False and r.json["game"] == "third-man"
    assert table.client.get(f"/api/history/{new}").json["state"] == table.client.get(f"/api/history/{gid}").json["state"]
    assert table.store.lines(new) == table.store.lines(gid)
    assert r.json["state"] == replay(table.store.lines(gid)).public()


def test_a_finished_game_round_trips_through_the_public_export(table):
    gid = table.play(scoreboard(("Chloé", "Łukasz"), target=10), add(0, 4), SECRET,
                     {"type": "secret", "seat": 1, "value": 2}, add(1, 12))
    log = table.client.get(f"/api/history/{gid}/export.jsonl").data
    r = post_log(table, log)
    assert r.status_code == 200 and r.json["finished"] is True
    new = table.store.game(r.json["id"])
    assert new.finished and new.winner == [1] and new.players == ["Chloé", "Łukasz"]
    assert r.json["state"] == table.client.get(f"/api/history/{gid}").json["state"]
    assert (table.store.dir / "backups" / f"game-{new.id:06d}-scoreboard.jsonl").exists()


def test_an_imported_unfinished_game_can_be_resumed_and_continued(table):
    r = post_log(table, jsonl(scoreboard(target=10), add(0, 7)))
    gid = r.json["id"]
    assert table.client.post(f"/api/history/{gid}/resume", headers=pin_headers()).status_code == 200
    table.play(add(0, 3))
    assert table.session.public()["finished"] is True and table.store.game(gid).winner == [0]


def test_a_log_bigger_than_one_action_body_is_accepted(table):
    actions = [scoreboard()] + [add(i % 2, 1) for i in range(800)]          # ~30 KiB
    data = jsonl(*actions)
    assert len(data) > 16 * 1024
    r = post_log(table, data)
    assert r.status_code == 200 and r.json["state"]["scores"] == [400, 400]


def test_blank_lines_and_a_byte_order_mark_are_read_as_replay_reads_them(table):
    data = b"\xef\xbb\xbf" + jsonl(scoreboard()) + b"\n   \n" + jsonl(add(1, 2))
    r = post_log(table, data)
    assert r.status_code == 200
    assert table.store.lines(r.json["id"]) == ['{"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]}',
                                                '{"type": "add", "seat": 1, "points": 2}']


# -- import: refusals store nothing ---------------------------------------------------------------

@pytest.mark.parametrize("data, line, words", [
    (jsonl(scoreboard(), add(0, 1), add(5, 1)), 3, "seat"),
    (jsonl(scoreboard()) + b"{not json\n", 2, "not written as an action"),
    (jsonl(scoreboard()) + b'{"type": "add", "seat": 0, "points": 1}\xff\n', 2, "not written as an action"),
    (b"", 1, "empty"),
    (b"\n  \n", 1, "empty"),
    (jsonl(scoreboard(), scoreboard()), 2, "new_game"),
    (jsonl(add(0, 1)), 1, "new_game"),
    (jsonl(THIRD_MAN, bid(0, 6), {"type": "bid", "seat": 2, "card": None}), 3, "card"),   # a redacted export
    (jsonl(scoreboard(target=1), add(0, 1), add(1, 1)), 3, "over"),
])
def test_a_bad_log_is_refused_at_its_line_and_nothing_is_stored(table, data, line, words):
    before = count_games(table)
    r = post_log(table, data)
    assert r.status_code == 400
    assert r.json["error"].startswith(f"line {line}: ")
    assert words in r.json["error"]
    assert count_games(table) == before


def test_the_web_refusal_is_word_for_word_what_companion_replay_says(table, tmp_path, companion_cmd):
    data = jsonl(scoreboard(), add(0, 1), add(5, 1))
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    cli = subprocess.run([*companion_cmd, "replay", str(path)], capture_output=True, text=True,
                         env={"LANG": "en", "PATH": "/usr/bin:/bin"})
    assert cli.returncode == 2
    assert post_log(table, data).json["error"] == cli.stderr.strip()


def test_importing_needs_the_pin(table):
    data = jsonl(scoreboard())
    assert post_log(table, data, headers={}).status_code == 401
    assert post_log(table, data, headers={"X-Table-Pin": "0000"}).status_code == 403
    assert count_games(table) == 0


def test_a_log_over_a_mebibyte_is_refused(table):
    data = jsonl(scoreboard()) + b" " * (1024 * 1024)
    r = post_log(table, data)
    assert r.status_code == 413 and "error" in r.json
    assert count_games(table) == 0


# -- the core functions -----------------------------------------------------------------------------

def test_import_log_stores_nothing_for_a_bad_log(tmp_path):
    store = Store(tmp_path)
    try:
        with pytest.raises(ReplayError) as info:
            import_log(store, [json.dumps(scoreboard()), '{"type": "add"}'])
        assert info.value.line == 2 and store.games() == []
        gid = import_log(store, [json.dumps(scoreboard()), "", json.dumps(add(0, 2))])
        assert store.game(gid).actions == 2 and not store.game(gid).finished
    finally:
        store.close()


# -- companion import FILE ---------------------------------------------------------------------------

def run(cmd, *args, stdin=None):
    return subprocess.run([*cmd, *args], capture_output=True, input=stdin, env={"LANG": "en", "PATH": "/usr/bin:/bin"})


def stored(data_dir):
    store = Store(data_dir)
    try:
        return [(r.game, r.finished, store.lines(r.id)) for r in store.games()]
    finally:
        store.close()


def test_cli_import_stores_a_log_as_a_new_game(tmp_path, companion_cmd):
    path = tmp_path / "game.jsonl"
    path.write_bytes(jsonl(scoreboard(("Zoë", "Ben"), target=3), add(0, 3)))
    out = run(companion_cmd, "import", str(path), "--data", str(tmp_path / "data"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().strip() == "Stored as game 1."
    assert stored(tmp_path / "data") == [("scoreboard", True, path.read_text().splitlines())]


def test_cli_import_reads_standard_input(tmp_path, companion_cmd):
    out = run(companion_cmd, "import", "-", "--data", str(tmp_path / "data"),
              stdin=jsonl(THIRD_MAN, bid(0, 6), bid(2, 3)))
    assert out.returncode == 0
    assert stored(tmp_path / "data")[0][:2] == ("third-man", False)


def test_cli_import_refuses_a_bad_log_like_replay_and_stores_nothing(tmp_path, companion_cmd):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(scoreboard(), add(0, 1), add(5, 1)))
    out = run(companion_cmd, "import", str(path), "--data", str(tmp_path / "data"))
    replayed = run(companion_cmd, "replay", str(path))
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().startswith("line 3: ")
    assert out.stderr == replayed.stderr
    assert not (tmp_path / "data").exists() or stored(tmp_path / "data") == []


def test_cli_import_of_a_missing_file_is_exit_2(tmp_path, companion_cmd):
    out = run(companion_cmd, "import", str(tmp_path / "nope.jsonl"), "--data", str(tmp_path / "data"))
    assert out.returncode == 2 and b"nope.jsonl" in out.stderr and b"Traceback" not in out.stderr
