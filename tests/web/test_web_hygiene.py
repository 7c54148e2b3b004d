"""Input hygiene and bounded costs (issue 13, findings 6, 7 and 9), each
finding replayed as it was found: numbers the store cannot hold, a digit
that is not 0-9, bodies over the limits, NaN, names with control or
direction characters, foreign ``Host`` names, ``companion import
/dev/zero``, the largest game, history in pages, mock mode on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from box_support import mock_factory  # noqa: F401 (fixture)
from companion.exports import steps_of
from companion.limits import HISTORY_PAGE_STEPS, MAX_GAME_LINES, MAX_IMPORT_BYTES
from web_support import PIN, app, client, http, make_app, pin_headers, running_server  # noqa: F401 (fixtures)

SCOREBOARD = {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé"]}


def add(seat, points):
    return {"type": "add", "seat": seat, "points": points}


def post(client, body, headers=None):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post("/api/actions", data=data, content_type="application/json",
                       headers={**pin_headers(), **(headers or {})})


def scoreboard_log(lines: int) -> bytes:
    out = [json.dumps(SCOREBOARD)] + [json.dumps(add(n % 3, n % 7 + 1)) for n in range(lines - 1)]
    return ("\n".join(out) + "\n").encode()


# -- numbers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/history/99999999999999999999999/export.jsonl",
                                  "/api/history/99999999999999999999999",
                                  "/history/9223372036854775808",
                                  "/api/seats/99999999999999999999999/view",
                                  "/api/history/" + "9" * 5000])
def test_a_number_too_large_for_the_store_in_the_address_is_a_clear_400(client, path):
    r = client.get(path)
    assert r.status_code == 400, r.data[:300]
    assert "too large" in r.json["error"] and "9223372036854775807" in r.json["error"]


def test_the_largest_stored_number_is_still_a_plain_404(client):
    r = client.get("/api/history/9223372036854775807")
    assert r.status_code == 404 and "no stored game" in r.json["error"]


def test_a_superscript_digit_as_the_mirror_scale_is_a_400_not_a_500(session, mock_factory):  # noqa: F811
    from hardware import Box
    from hardware.testing import box_config

    box = Box(session, box_config(), mock=True, pin_factory=mock_factory)
    box.start()
    app = make_app(session, box=box, mock=True)
    try:
        r = app.test_client().get("/oled.png?scale=²")
        assert r.status_code == 400 and "scale" in r.json["error"]
    finally:
        app.extensions["companion"].close()
        box.close()


def test_a_superscript_digit_as_a_fight_coin_is_a_400_not_a_500(client):
    assert post(client, {"type": "new_game", "game": "fight", "players": ["Ann", "Ben"]}).status_code == 200
    r = client.get("/api/fight/changes?play=²")
    assert r.status_code == 400 and "'play'" in r.json["error"]


@pytest.mark.parametrize("body, words", [
    (b'{"type": "add", "seat": 0, "points": NaN}', ["NaN", "not numbers"]),
    (b'{"type": "add", "seat": 0, "points": -Infinity}', ["-Infinity", "not numbers"]),
    (b'{"type": "add", "seat": 0, "points": 99999999999999999999999}', ["99999999999999999999999", "too large"]),
    (b'{"type": "add", "seat": 0, "points": -9223372036854775808}', ["too large"]),
    (b'{"type": "add", "seat": 0, "points": ' + b"9" * 5000 + b"}", ["too large"]),
    (b'{"type": "add", "seat": 0, "points": 1e400}', ["1e400", "too large"]),
])
def test_numbers_the_box_cannot_keep_are_refused_clearly_and_change_nothing(client, body, words):
    assert post(client, SCOREBOARD).status_code == 200
    before = client.get("/api/state").json
    r = post(client, body)
    assert r.status_code == 400
    for word in words:
        assert word in r.json["error"]
    assert "too deep" not in r.json["error"]
    assert client.get("/api/state").json == before


def test_the_largest_64_bit_number_reaches_the_games_own_rules(client):
    assert post(client, SCOREBOARD).status_code == 200
    r = post(client, add(0, 9223372036854775807))
    assert r.status_code == 400 and "'points' must be from" in r.json["error"]


# -- names and labels --------------------------------------------------------------------------

UNSAFE_NAMES = ["Ann\x1b]0;pwned\x07", "Ann\x00", "\u202eBen", "Ben\u2066x\u2069", "Ann\x9b2J", "Ann\x7f",
                "Ann\u200f", "A\ud800"]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_a_player_name_with_a_control_or_direction_character_is_a_clear_400(client, name):
    r = post(client, {**SCOREBOARD, "players": [name, "Zoë"]})
    assert r.status_code == 400
    assert "players[0]" in r.json["error"] and "U+" in r.json["error"]
    assert client.get("/api/state").json == {"game": None}


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_a_seat_label_with_a_control_or_direction_character_is_a_clear_400(client, name):
    assert post(client, SCOREBOARD).status_code == 200
    r = client.post("/api/seats/0/claim", data=json.dumps({"name": name}), content_type="application/json",
                    headers=pin_headers())
    assert r.status_code == 400 and "'name'" in r.json["error"]
    assert client.get("/api/seats").json["seats"][0]["claimed"] is False


def test_plain_names_with_accents_and_emoji_are_still_welcome(client):
    players = ["Chloé", "Łukasz", "محمد", "👩‍👩‍👧 Zoë"]
    r = post(client, {**SCOREBOARD, "players": players})
    assert r.status_code == 200 and r.json["players"] == players
    r = client.post("/api/seats/1/claim", json={"name": "Łukasz's phone"}, headers=pin_headers())
    assert r.status_code == 200 and r.json["label"] == "Łukasz's phone"


def test_an_imported_log_with_an_unsafe_name_is_refused_on_the_web(client):
    log = json.dumps({**SCOREBOARD, "players": ["Ann\x1b]0;x\x07", "Ben"]}).encode() + b"\n"
    r = client.post("/api/history/import", data=b"\n" + log, headers=pin_headers())
    assert r.status_code == 400 and r.json["error"].startswith("line 2: ")
    assert client.get("/api/history").json["games"] == []


@pytest.mark.parametrize("path", ["/api/history?player=%1B%5B2J", "/history?player=%E2%80%AEnnA"])
def test_the_history_filter_refuses_unsafe_names_too(client, path):
    r = client.get(path)
    assert r.status_code == 400 and "player" in r.json["error"]


def run_cli(companion_cmd, *args, data=None, stdin=None, timeout=30):
    return subprocess.run([*companion_cmd, *args, *(["--data", str(data)] if data else [])],
                          input=stdin, capture_output=True, timeout=timeout,
                          env={"LANG": "en", "PATH": "/usr/bin:/bin"})


def test_the_command_line_never_prints_a_stored_control_character(tmp_path, companion_cmd):
    # `companion replay` / `import` accept these names (the log contract); the
    # operator's terminal must still never receive them raw.
    names = ["Ann\x1b]0;pwned\x07", "\u202eBen", "Chloé\x9b2J"]
    log = json.dumps({**SCOREBOARD, "players": names}, ensure_ascii=False).encode() + b"\n"
    imported = run_cli(companion_cmd, "import", "-", data=tmp_path, stdin=log)
    assert imported.returncode == 0, imported.stderr
    listed = run_cli(companion_cmd, "games", data=tmp_path)
    exported = run_cli(companion_cmd, "export", "current", data=tmp_path)
    for result in (listed, exported):
        assert result.returncode == 0
        text = result.stdout.decode()
        for bad in ("\x1b", "\x07", "\u202e", "\x9b"):
            assert bad not in text
    assert "Ann\\u001b]0;pwned\\u0007" in listed.stdout.decode() and "Chloé" in listed.stdout.decode()
    # The export still replays to the same names.
    replayed = run_cli(companion_cmd, "replay", "-", stdin=exported.stdout)
    assert replayed.returncode == 0 and json.loads(replayed.stdout)["players"] == names


def test_companion_export_of_a_number_too_large_for_the_store_says_there_is_no_such_game(tmp_path, companion_cmd):
    result = run_cli(companion_cmd, "export", "99999999999999999999999", data=tmp_path)
    assert result.returncode == 1 and b"Traceback" not in result.stderr
    assert b"no stored game '99999999999999999999999'" in result.stderr


def test_companion_import_of_dev_zero_ends_with_a_clear_message(tmp_path, companion_cmd):
    # Ends at all (reading forever would hit the ceiling); how fast is not a test.
    result = run_cli(companion_cmd, "import", "/dev/zero", data=tmp_path, timeout=120)
    assert result.returncode == 2
    assert f"larger than the largest log the box imports ({MAX_IMPORT_BYTES} bytes)" in result.stderr.decode()


def test_companion_import_refuses_a_log_longer_than_the_largest_game(tmp_path, companion_cmd):
    result = run_cli(companion_cmd, "import", "-", data=tmp_path, stdin=scoreboard_log(MAX_GAME_LINES + 1))
    assert result.returncode == 2 and f"at most {MAX_GAME_LINES} lines" in result.stderr.decode()
    assert run_cli(companion_cmd, "games", data=tmp_path).stdout.decode().strip() == "No stored games yet."


# -- the Host header (DNS rebinding) -----------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/state", "/api/history", "/oled.png", "/", "/api/events"])
def test_a_foreign_host_name_is_refused_with_json(client, path):
    r = client.get(path, headers={"Host": "rebind.example.com:8000"})
    assert r.status_code == 400 and r.mimetype == "application/json"
    assert "rebind.example.com" in r.json["error"]


def test_a_foreign_host_cannot_write_either(client):
    r = post(client, SCOREBOARD, headers={"Host": "rebind.example.com"})
    assert r.status_code == 400
    assert client.get("/api/state").json == {"game": None}


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST.",
                                  "192.168.1.20:8000", "table.example:8000", f"{socket.gethostname()}.local"])
def test_the_box_answers_to_its_own_names(session, host):
    app = make_app(session, url="http://192.168.1.20:8000/", allowed_hosts=["table.example"])
    try:
        r = app.test_client().get("/api/state", headers={"Host": host})
        assert r.status_code == 200, r.json
    finally:
        app.extensions["companion"].close()


def test_the_box_answers_to_its_own_interface_addresses(client):
    from web.hosts import own_addresses

    address = next(a for a in own_addresses() if not a.startswith("127.") and a != "::1")
    host = f"[{address}]" if ":" in address else address
    assert client.get("/api/state", headers={"Host": f"{host}:8000"}).status_code == 200


# -- bodies over the limits: the API's JSON, never waitress's text --------------------------------

def raw_request(port, raw: bytes) -> tuple[int, dict, bytes]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    reply = b""
    try:
        try:
            sock.sendall(raw)
        except OSError:
            pass
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except OSError:
            pass
    finally:
        sock.close()
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, body


@pytest.mark.parametrize("size", [MAX_IMPORT_BYTES + 100, 5_000_000])
def test_a_too_large_import_gets_the_apis_json_413(app, size):
    with running_server(app) as server:
        body = b"x" * min(size, MAX_IMPORT_BYTES + 100)
        raw = (b"POST /api/history/import HTTP/1.1\r\nHost: localhost\r\nX-Table-Pin: " + PIN.encode()
               + b"\r\nContent-Length: " + str(size).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        status, headers, reply = raw_request(server.port, raw)
        assert status == 413
        assert headers["content-type"].startswith("application/json")
        assert "too large" in json.loads(reply)["error"]
        assert http(server.port, "GET", "/api/history")[2]["games"] == []


# -- the largest game ---------------------------------------------------------------------------------

def test_an_action_beyond_the_largest_game_is_refused_and_changes_nothing(client, session):
    r = client.post("/api/history/import", data=scoreboard_log(MAX_GAME_LINES), headers=pin_headers())
    assert r.status_code == 200, r.json
    gid = r.json["id"]
    assert client.post(f"/api/history/{gid}/resume", headers=pin_headers()).status_code == 200
    before = client.get("/api/state").json
    for action in (add(0, 1), {"type": "undo"}):
        r = post(client, action)
        assert r.status_code == 409 and f"({MAX_GAME_LINES} lines)" in r.json["error"]
    assert client.get("/api/state").json == before
    assert session.store.game(gid).actions == MAX_GAME_LINES
    assert post(client, SCOREBOARD).status_code == 200          # a new game is always possible


def test_an_import_longer_than_the_largest_game_is_refused(client):
    r = client.post("/api/history/import", data=scoreboard_log(MAX_GAME_LINES + 1), headers=pin_headers())
    assert r.status_code == 413 and f"at most {MAX_GAME_LINES} steps" in r.json["error"]
    assert client.get("/api/history").json["games"] == []


# -- history in pages ---------------------------------------------------------------------------------

def test_history_steps_come_in_bounded_pages_that_add_up_to_the_whole_game(client, session):
    lines = 2 * HISTORY_PAGE_STEPS + 17
    gid = client.post("/api/history/import", data=scoreboard_log(lines), headers=pin_headers()).json["id"]
    first = client.get(f"/api/history/{gid}").json
    assert set(first) >= {"record", "state", "steps", "broken_at", "page"}
    assert len(first["steps"]) == HISTORY_PAGE_STEPS
    assert first["page"] == {"from": 0, "count": HISTORY_PAGE_STEPS, "total": lines,
                             "next": f"/api/history/{gid}?from={HISTORY_PAGE_STEPS}"}
    steps, page = list(first["steps"]), first["page"]
    while page["next"]:
        body = client.get(page["next"]).json
        assert body["state"] == first["state"] and len(body["steps"]) <= HISTORY_PAGE_STEPS
        steps += body["steps"]
        page = body["page"]
    expected, _ = steps_of(session.store.lines(gid))
    assert steps == json.loads(json.dumps(expected))
    assert client.get(f"/api/history/{gid}?from={lines}").status_code == 404
    assert client.get(f"/api/history/{gid}?from=-1").status_code == 400


def test_the_history_page_of_a_long_game_carries_one_page_of_steps(client):
    lines = 3 * HISTORY_PAGE_STEPS
    gid = client.post("/api/history/import", data=scoreboard_log(lines), headers=pin_headers()).json["id"]
    html = client.get(f"/history/{gid}").get_data(as_text=True)
    boot = json.loads(html.split('<script type="application/json" id="boot">', 1)[1].split("</script>", 1)[0])
    assert len(boot["detail"]["steps"]) == HISTORY_PAGE_STEPS and boot["detail"]["page"]["total"] == lines
    assert f'max="{lines - 1}"' in html


def test_the_kept_rendering_of_the_current_game_follows_every_change(client, session):
    assert post(client, SCOREBOARD).status_code == 200
    gid = session.game_id
    for points in (3, 4):
        before = client.get(f"/api/history/{gid}").json
        csv_before = client.get(f"/api/history/{gid}/export.csv").data
        assert post(client, add(1, points)).status_code == 200
        after = client.get(f"/api/history/{gid}").json
        assert after["page"]["total"] == before["page"]["total"] + 1
        assert after["steps"][-1]["action"] == add(1, points) and after["state"] == client.get("/api/state").json
        assert client.get(f"/api/history/{gid}/export.csv").data != csv_before
        exported = client.get(f"/api/history/{gid}/export.jsonl").data.decode().splitlines()
        assert json.loads(exported[-1]) == add(1, points)


# -- mock mode listens on loopback ----------------------------------------------------------------------

def test_mock_mode_listens_on_loopback_unless_told_otherwise(tmp_path):
    import re
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "appliance.cli", "run", "--mock", "--port", "0",
                             "--data", str(tmp_path / "data")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        match = re.match(r"companion: serving http://127\.0\.0\.1:(\d+)/", line)
        assert match, (line, proc.stderr.read() if proc.poll() is not None else "")
        port = int(match.group(1))
        assert http(port, "GET", "/api/state")[0] == 200
        from web.hosts import own_addresses

        others = [a for a in own_addresses() if "." in a and not a.startswith("127.")]
        for address in others:
            with pytest.raises(OSError):
                socket.create_connection((address, port), timeout=2).close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
