"""A restore from the web on the running appliance (``companion run``):
the restore is staged, the companion stops with the code systemd restarts
on (75) — or, not run by systemd, starts itself again — and its start swaps
the backup in.  The table then reads the backup's world.  The restore is
the owner's: the running companion refuses the PIN alone."""

from __future__ import annotations

import os
import subprocess

import pytest

from test_appliance_kill import PIN, companion_command, serving_port
from test_backup import Box, THIRD_MAN, add, bid, scoreboard
from test_update_web import make_owner, owner_headers
from web_support import http

pytestmark = pytest.mark.slow


def spawn(data, systemd: bool) -> subprocess.Popen:
    env = {**os.environ, "COMPANION_PIN": PIN, "PYTHONUNBUFFERED": "1"}
    env.pop("NOTIFY_SOCKET", None)
    env.pop("INVOCATION_ID", None)
    if systemd:
        env["INVOCATION_ID"] = "0123456789abcdef"        # what systemd sets for a unit's process
    return subprocess.Popen(companion_command() + ["run", "--mock", "--host", "127.0.0.1", "--port", "0",
                                                   "--data", str(data)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)


def listed(port) -> list:
    status, _, body = http(port, "GET", "/api/history/games")
    assert status == 200
    return [(g["id"], g["players"], g["scores"], g["finished"], g["current"]) for g in body["games"]]


@pytest.mark.parametrize("systemd", [True, False], ids=["under-systemd", "by-itself"])
def test_a_restore_from_the_web_restarts_the_companion_into_the_backups_world(tmp_path, systemd):
    source = Box(tmp_path / "source")
    source.play(scoreboard("Marc-Antoine", "Éloïse"), add(0, 5), add(1, 9))
    source.play(THIRD_MAN, bid(0, 6))
    expected = [(g["id"], g["players"], g["scores"], g["finished"], g["current"])
                for g in source.client.get("/api/history/games").json["games"]]
    backup = source.client.get("/api/backup", headers={"X-Table-Pin": "2468"}).data
    source.close()

    (tmp_path / "box").mkdir()
    make_owner(tmp_path / "box")                         # what set-up's end leaves in the data folder
    proc = spawn(tmp_path / "box", systemd)
    try:
        port = serving_port(proc)
        assert port
        http(port, "POST", "/api/actions", {"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben"]},
             {"X-Table-Pin": PIN})
        assert listed(port) != expected
        status, _, body = http(port, "POST", "/api/backup/restore", backup,
                               {"X-Table-Pin": PIN, "Content-Type": "application/zip"})
        assert status == 401 and "X-Owner-Password" in body["error"], body
        assert proc.poll() is None
        status, _, body = http(port, "POST", "/api/backup/restore", backup,
                               {**owner_headers(), "Content-Type": "application/zip"})
        assert status == 202 and body["restored"]["games"] == 2, body
        if systemd:
            assert proc.wait(timeout=60) == 75
            proc = spawn(tmp_path / "box", systemd)      # what Restart=on-failure does
        port = serving_port(proc)                        # the same process, started again, says it anew
        assert port
        assert listed(port) == expected
        # What it replaced went once the restored store had opened (the page said it is lost).
        assert not [p.name for p in (tmp_path / "box").iterdir() if p.name.startswith("replaced-")]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
