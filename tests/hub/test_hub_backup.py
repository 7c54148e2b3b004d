"""A box joined to a hub sends its latest backup there (hub/feeder.py,
``PUT /api/box/backup``); the organiser gets it back with ``companion hub
backup BOX FILE`` and restores it onto a fresh box: the same world.  On the
real PostgreSQL (tests/hub_support.py)."""

from __future__ import annotations

import io
import zipfile

from appliance.backup import restore_backup
from appliance.cli import main
from hub.feeder import Feeder
from hub_support import add_box, hub_db, hub_server, pg_server  # noqa: F401
from test_backup import THIRD_MAN, Box, add, bid, pin_headers, scoreboard
from web_support import http, wait_until


def hub_url(server):
    return f"http://127.0.0.1:{server.port}"


def fetched(db_url, name, path) -> bool:
    return main(["hub", "backup", "--db", db_url, name, str(path)]) == 0


def test_the_hubs_copy_of_a_boxs_backup_restores_the_same_world(hub_server, tmp_path, capsys):
    key = add_box(hub_server.db, "table-1")
    box = Box(tmp_path / "box")
    feeder = Feeder(box.store.path, hub_url(hub_server), key, box.session, min_backoff=0.05, max_backoff=0.5,
                    rescan=0.2, timeout=5.0, backup_every=0.1).start()
    try:
        box.play(scoreboard("Marc-Antoine", "Éloïse"), add(0, 5), add(1, 9))
        box.play(THIRD_MAN, bid(0, 6), bid(2, 3))          # Éloïse's card waits for the others
        file = tmp_path / "from-hub.zip"

        # The box's own backup now: the hub's copy must be of this moment
        # (both games, and the players as the last action left them), not
        # one the feeder sent between two actions on a slow machine.
        now = zipfile.ZipFile(io.BytesIO(box.client.get("/api/backup", headers=pin_headers()).data))

        def has_both():
            # Every member but the manifest (which says when the file was
            # made) is the same as the box's own backup of this moment.
            if not fetched(hub_server.db, "table-1", file):
                return False
            with zipfile.ZipFile(file) as zf:
                return (sorted(zf.namelist()) == sorted(now.namelist())
                        and all(zf.read(n) == now.read(n) for n in now.namelist() if n != "companion-backup.json"))
        assert wait_until(has_both, timeout=60)
        before = box.seen()
    finally:
        feeder.stop()
        box.close()
    capsys.readouterr()
    data = file.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        everything = b"".join(zf.read(n) for n in zf.namelist())
    assert key.encode() not in everything and b'"card": 3' not in everything
    restore_backup(file, tmp_path / "fresh")
    fresh = Box(tmp_path / "fresh")
    try:
        seen = fresh.seen()
        # Everything is the same but the game whose secret was pending: it
        # stops before that entry (its value never left the box).
        third = [g["id"] for g in before["games"]["games"] if g["game"] == "third-man"][0]
        assert {k: v for k, v in seen.items() if k not in (third, "games", "state")} == \
            {k: v for k, v in before.items() if k not in (third, "games", "state")}
        assert seen[third][0]["steps"] == before[third][0]["steps"][:2]
    finally:
        fresh.close()


def test_the_hub_keeps_only_a_good_backup_from_a_known_box(hub_server, tmp_path):
    key = add_box(hub_server.db, "table-2")
    box = Box(tmp_path / "box")
    box.play(scoreboard("Ann", "Ben"), add(0, 1))
    good = box.client.get("/api/backup", headers={"X-Table-Pin": "2468"}).data
    box.close()
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/zip"}
    status, _, body = http(hub_server.port, "PUT", "/api/box/backup", good, auth)
    assert status == 200 and body["games"] == 1
    status, _, body = http(hub_server.port, "PUT", "/api/box/backup", good[: len(good) // 2], auth)
    assert status == 422 and "cut short" in body["error"]
    status, _, body = http(hub_server.port, "PUT", "/api/box/backup", good,
                           {"Authorization": "Bearer not-a-key", "Content-Type": "application/zip"})
    assert status == 401
    assert fetched(hub_server.db, "table-2", tmp_path / "kept.zip")
    assert (tmp_path / "kept.zip").read_bytes() == good          # the good one stays
    assert not fetched(hub_server.db, "table-3", tmp_path / "none.zip")
