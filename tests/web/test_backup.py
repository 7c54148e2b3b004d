"""One backup file of the whole box (appliance/backup.py, web/backup.py):
made on one box, restored on a fresh one, the history, statistics, roster
and settings are the same as the phones and the box read them; a corrupt,
truncated, foreign or too-new file is refused with one line and changes
nothing; the file never holds a secret the PIN may not read, the PIN or
the hub's key.  Downloading needs the PIN; restoring is the owner's (the
owner password), never the PIN's alone."""

from __future__ import annotations

import hashlib
import os
import io
import itertools
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from companion import config as cfg
from appliance.backup import (FORMAT_VERSION, MANIFEST, TABLE_SETTINGS, BackupError, finish_pending,
                              restore_backup, toml_text)
from appliance.cli import main
from companion.session import TableSession
from companion.store import Store
from web_support import PIN, make_app, pin_headers
from test_update_web import OWNER, make_owner, owner_headers

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Marc-Antoine", "Éloïse", "Chloé", "Dan"]}
TOML = """pin = "9753"
hub_url = "http://hub.local:8100"
hub_key = "hub-secret-key-abcdef"
language = "fr"
speak = true
names = ["Éloïse", "Marc-Antoine"]
wifi_password = "table-wifi-99"
bounce_ms = 50

[display]
rotate = 2
"""


def scoreboard(*players):
    return {"type": "new_game", "game": "scoreboard", "players": list(players)}


def add(seat, points):
    return {"type": "add", "seat": seat, "points": points}


def bid(seat, card):
    return {"type": "bid", "seat": seat, "card": card}


class Box:
    """A data folder with its store (a clock ticking a second per call), session
    and web app; an owner (the password OWNER), unless ``with_owner`` is False."""

    def __init__(self, folder: Path, start=1_700_000_000, with_owner=True):
        ticks = itertools.count(start)
        self.folder = folder
        self.store = Store(folder, clock=lambda: float(next(ticks)))
        if with_owner:
            make_owner(folder)
        self.session = TableSession(self.store)
        self.app = make_app(self.session, data_dir=str(folder))
        self.client = self.app.test_client()

    def play(self, *actions):
        for action in actions:
            r = self.client.post("/api/actions", json=action, headers=pin_headers())
            assert r.status_code == 200, r.json
        return self.session.game_id

    def seen(self) -> dict:
        """What phones read of the history, statistics and roster."""
        c = self.client
        out = {"games": c.get("/api/history/games").json, "stats": c.get("/api/stats").json,
               "players": c.get("/api/players").json, "state": c.get("/api/state").json}
        for game in out["games"]["games"]:
            gid = game["id"]
            out[gid] = (c.get(f"/api/history/{gid}").json, c.get(f"/api/history/{gid}/export.csv").data,
                        c.get(f"/api/history/{gid}/export.jsonl").data)
        return out

    def close(self):
        self.app.extensions["companion"].close()
        self.store.close()


def played(folder: Path) -> Box:
    """A box that has lived: finished and unfinished games, a roster edited
    on the phones, its settings file and its Wi-Fi password."""
    folder.mkdir(parents=True)
    (folder / "companion.toml").write_text(TOML, encoding="utf-8")
    (folder / "wifi-password").write_text("abcdefgh2345\n")
    box = Box(folder)
    box.play(scoreboard("Éloïse", "Marc-Antoine"), add(0, 5), add(1, 7))
    box.play(THIRD_MAN, bid(0, 6), bid(1, 2), bid(2, 3), bid(3, 9))
    assert box.client.post("/api/players", json={"name": "Zoë"}, headers=pin_headers()).status_code == 201
    ids = {p["name"]: p["id"] for p in box.client.get("/api/players").json["players"]}
    assert box.client.post(f"/api/players/{ids['Dan']}/rename", json={"name": "Daniel"},
                           headers=pin_headers()).status_code == 200
    box.play(scoreboard("Chloé", "Zoë"), add(1, 3))
    return box


def table_settings(folder: Path) -> dict:
    config = cfg.load(folder)
    return {key: config.get(key) for key in TABLE_SETTINGS}


def fingerprint(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def download(box: Box) -> bytes:
    r = box.client.get("/api/backup", headers=pin_headers())
    assert r.status_code == 200, r.data[:200]
    assert r.headers["Content-Type"] == "application/zip" and r.headers["Cache-Control"] == "no-store"
    return r.data


# -- restored on a fresh box, the same world -------------------------------------

def test_a_backup_from_the_page_restored_on_a_fresh_box_by_the_command_line_gives_the_same_world(tmp_path, capsys):
    box = played(tmp_path / "a")
    before, settings = box.seen(), table_settings(box.folder)
    file = tmp_path / "box.zip"
    file.write_bytes(download(box))
    box.close()
    assert main(["restore", str(file), "--data", str(tmp_path / "fresh")]) == 0
    assert "Restored 3 games" in capsys.readouterr().out
    fresh = Box(tmp_path / "fresh", start=1_800_000_000)
    try:
        assert fresh.seen() == before
        assert table_settings(tmp_path / "fresh") == settings
        assert (tmp_path / "fresh" / "wifi-password").read_text().strip() == "abcdefgh2345"
        config = cfg.load(tmp_path / "fresh")
        assert config["pin"] is None and config["hub_key"] is None and config["hub_url"] is None
        assert config["bounce_ms"] == cfg.DEFAULTS["bounce_ms"]      # the box's wiring is its own
        # The game at the table goes on where it was.
        assert fresh.session.game_id == max(g["id"] for g in before["games"]["games"])
        fresh.play(add(0, 2))
        assert fresh.client.get("/api/state").json["scores"] == [2, 3]
    finally:
        fresh.close()


def test_the_command_line_backup_restores_through_the_web_route_onto_a_box_in_play(tmp_path, capsys):
    box = played(tmp_path / "a")
    before = box.seen()
    assert main(["backup", "--data", str(box.folder), str(tmp_path / "box.zip")]) == 0
    assert "3 games" in capsys.readouterr().out
    box.close()
    # Another box, a game under way and a bid waiting on it.
    other = Box(tmp_path / "b", start=1_750_000_000)
    other.play(scoreboard("Ann", "Ben"), add(0, 1))
    other.play(THIRD_MAN, bid(0, 4))
    restarts = []
    other.app.extensions["companion.restart"] = lambda: restarts.append(True)
    r = other.client.post("/api/backup/restore", data=(tmp_path / "box.zip").read_bytes(), headers=owner_headers())
    assert r.status_code == 202, r.json
    assert r.json["restored"]["games"] == 3 and r.json["restarting"] is True
    import time
    deadline = time.monotonic() + 30
    while not restarts and time.monotonic() < deadline:
        time.sleep(0.01)
    assert restarts
    other.close()
    assert finish_pending(tmp_path / "b")             # what the companion's start does
    again = Box(tmp_path / "b", start=1_800_000_000)
    try:
        assert again.seen() == before
    finally:
        again.close()
    # What it replaced is kept aside until the restored store has opened at the start.
    kept = [p for p in (tmp_path / "b").iterdir() if p.name.startswith("replaced-")]
    assert len(kept) == 1 and (kept[0] / "companion.db").exists()
    assert not (tmp_path / "b" / ".restore-new").exists()


@pytest.mark.parametrize("opens", ["whole", "damaged"])
def test_what_a_restore_replaced_goes_once_the_restored_store_has_opened(tmp_path, opens):
    """The Backup page says what a restore replaces is lost: it stays on the
    card (``replaced-<stamp>/``) only until the restored store has opened
    at the start, unless that store opened only by being repaired."""
    from appliance import runner

    box = played(tmp_path / "a")
    assert main(["backup", "--data", str(box.folder), str(tmp_path / "box.zip")]) == 0
    box.close()
    other = Box(tmp_path / "b")
    other.play(scoreboard("Ann", "Ben"), add(0, 1))
    other.close()
    restore_backup(tmp_path / "box.zip", tmp_path / "b")
    kept = [p for p in (tmp_path / "b").iterdir() if p.name.startswith("replaced-")]
    assert len(kept) == 1
    if opens == "damaged":
        db = tmp_path / "b" / "companion.db"
        db.write_bytes(db.read_bytes()[:100] + b"\xff" * 4000)
    store = Store(tmp_path / "b")                  # the companion's start: the store, then what follows its opening
    try:
        runner._after_open(store, tmp_path / "b")
        left = [p.name for p in (tmp_path / "b").iterdir() if p.name.startswith("replaced-")]
        assert left == ([] if opens == "whole" else [kept[0].name])
    finally:
        store.close()


def test_a_game_waiting_for_a_secret_is_saved_up_to_that_entry_and_resumes_there(tmp_path):
    box = Box(tmp_path / "a")
    gid = box.play(THIRD_MAN, bid(0, 6), bid(2, 3))
    data = download(box)
    steps = box.client.get(f"/api/history/{gid}").json["steps"]
    box.close()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        log = zf.read(f"games/{gid:06d}.jsonl").decode()
    assert '"card": 3' not in log and len(log.splitlines()) == 2     # new_game and the lead's public card
    (tmp_path / "f.zip").write_bytes(data)
    restore_backup(tmp_path / "f.zip", tmp_path / "fresh")
    fresh = Box(tmp_path / "fresh")
    try:
        assert fresh.session.game_id == gid
        assert fresh.client.get(f"/api/history/{gid}").json["steps"] == steps[:2]
        assert fresh.client.get("/api/state").json["pending"]["entered"] == [0]
        fresh.play(bid(2, 3), bid(1, 8), bid(3, 1))     # Chloé enters her card again
        assert fresh.client.get("/api/state").json["last"]["cards"] == [6, 8, 3, 1]
    finally:
        fresh.close()


def test_the_file_is_the_same_whatever_the_secrets_and_never_holds_the_pin_or_the_hub_key(tmp_path):
    files = []
    for world, card in (("a", 3), ("b", 7)):
        folder = tmp_path / world
        folder.mkdir()
        (folder / "companion.toml").write_text(TOML.replace("9753", "1111" if world == "a" else "2222"))
        box = Box(folder)
        box.play(scoreboard("Ann", "Ben"), add(0, 5))
        box.play(THIRD_MAN, bid(0, 6), bid(2, card))
        files.append(download(box))
        box.close()
    assert files[0] == files[1]
    with zipfile.ZipFile(io.BytesIO(files[0])) as zf:
        everything = b"".join(zf.read(name) for name in zf.namelist())
    for never in (b"1111", b"hub-secret-key", b"hub.local", PIN.encode(), b"bounce_ms"):
        assert never not in everything


def test_the_backup_needs_the_pin(tmp_path):
    box = Box(tmp_path / "a")
    try:
        assert box.client.get("/api/backup").status_code == 401
        assert box.client.get("/api/backup", headers=pin_headers("0000")).status_code == 403
        assert box.client.get("/api/backup", headers=pin_headers()).status_code == 200
        # The owner password is no PIN: it opens nothing the PIN opens.
        assert box.client.get("/api/backup", headers=owner_headers()).status_code == 401
    finally:
        box.close()


def on_disk(folder: Path) -> list:
    """The data folder's files (SQLite's side files come and go with reads)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if not p.name.endswith(("-wal", "-shm", "-journal")))


def test_a_restore_is_the_owners_and_the_pin_alone_changes_nothing(tmp_path, good_backup):
    """The PIN is on the panel for anyone at the table: with it alone, or
    with a wrong owner password, the backup is refused and nothing on the
    box changes (not even a file of the upload); with the owner password it
    is restored."""
    box = played(tmp_path / "box")
    try:
        box.app.extensions["companion.restart"] = lambda: pytest.fail("no restart for a refused restore")
        before, files = box.seen(), on_disk(box.folder)
        for headers in ({}, pin_headers()):
            r = box.client.post("/api/backup/restore", data=good_backup, headers=headers)
            assert r.status_code == 401, r.json
            assert r.json["error"] == ("restoring a backup is the owner's: send the owner password "
                                       "(header X-Owner-Password)")
        r = box.client.post("/api/backup/restore", data=good_backup,
                            headers={**pin_headers(), **owner_headers("Éloïse's wrong password")})
        assert r.status_code == 403 and r.json["error"] == "wrong owner password"
        assert box.seen() == before and on_disk(box.folder) == files
        restarts = []
        box.app.extensions["companion.restart"] = lambda: restarts.append(True)
        r = box.client.post("/api/backup/restore", data=good_backup, headers=owner_headers())
        assert r.status_code == 202 and r.json["restored"]["games"] == 1, r.json
        assert (box.folder / ".restore-new" / "RESTORE-READY").exists()
    finally:
        box.close()
    # The owner is the box's, not the file's: the same password after the restore.
    assert finish_pending(box.folder)
    again = Box(box.folder, with_owner=False)
    try:
        assert [g["players"] for g in again.seen()["games"]["games"]] == [["Ann", "Ben"]]
        r = again.client.post("/api/backup/restore", data=b"PK", headers=owner_headers())
        assert r.status_code == 400 and "not a companion backup" in r.json["error"]
    finally:
        again.close()


def test_a_box_with_no_owner_yet_restores_nothing(tmp_path, good_backup):
    box = Box(tmp_path / "a", with_owner=False)
    try:
        box.app.extensions["companion.restart"] = lambda: pytest.fail("no restart without an owner")
        r = box.client.post("/api/backup/restore", data=good_backup, headers=owner_headers())
        assert r.status_code == 403 and "no owner yet" in r.json["error"]
        r = box.client.post("/api/backup/restore", data=good_backup, headers=pin_headers())
        assert r.status_code == 401
        assert not (tmp_path / "a" / ".restore-new").exists()
    finally:
        box.close()


# -- bad files: refused with one line, nothing changed ---------------------------

def _rezip(data: bytes, change, fix: bool = True) -> bytes:
    """The backup with its members changed by ``change(members)``, the
    manifest's checksums made to agree unless the change says otherwise."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    manifest = json.loads(members.pop(MANIFEST))
    change(members, manifest)
    manifest.setdefault("files", {})
    for name, raw in members.items():
        if fix and name in manifest["files"]:
            manifest["files"][name] = {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(MANIFEST, json.dumps(manifest))
        for name, raw in members.items():
            zf.writestr(name, raw)
    return out.getvalue()


def _flip(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x55]) + data[middle + 1:]


def _tar(data: bytes, mode: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tf:
        info = tarfile.TarInfo("games.json")
        info.size = 2
        tf.addfile(info, io.BytesIO(b"[]"))
    return out.getvalue()


def _other_zip(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("photo.jpg", b"\xff\xd8\xff" + b"x" * 100)
    return out.getvalue()


def _too_new(members, manifest):
    manifest["version"] = FORMAT_VERSION + 1
    manifest["made_by"] = "companion 9.0"
    members["games.json"] = b'{"a format": "this code cannot read"}'


def _bad_log(members, manifest):
    name = next(n for n in members if n.startswith("games/"))
    members[name] = members[name].replace(b'"points": 5', b'"points": "five"')


def _stale_checksum(members, manifest):
    """A log changed by hand (it still replays), the manifest left as it was."""
    name = next(n for n in members if n.startswith("games/"))
    members[name] = members[name].replace(b'"points": 5', b'"points": 6')


def _foreign_manifest(members, manifest):
    manifest["format"] = "octoprint-backup"


BAD = {
    "corrupt": (_flip, "damaged"),
    "truncated": (lambda data: data[: len(data) * 2 // 3], "damaged or cut short"),
    "empty": (lambda data: b"", "not a companion backup"),
    "a text file": (lambda data: b"hello, this is not a backup\n", "not a companion backup"),
    "a game log": (lambda data: b'{"type": "new_game", "game": "scoreboard", "players": ["A", "B"]}\n',
                   "not a companion backup"),
    "another zip": (_other_zip, "not a companion backup"),
    "a tar": (lambda data: _tar(data, "w"), "not a companion backup"),
    "a tar.gz": (lambda data: _tar(data, "w:gz"), "not a companion backup"),
    "another program's manifest": (lambda data: _rezip(data, _foreign_manifest), "not a companion backup"),
    "too new": (lambda data: _rezip(data, _too_new), "newer companion (companion 9.0, format 2)"),
    "a log that does not replay": (lambda data: _rezip(data, _bad_log), "damaged"),
    "a checksum that does not match": (lambda data: _rezip(data, _stale_checksum, fix=False), "damaged"),
}


@pytest.fixture(scope="module")
def good_backup(tmp_path_factory) -> bytes:
    box = Box(tmp_path_factory.mktemp("source"))
    box.play(scoreboard("Ann", "Ben"), add(0, 5))
    data = download(box)
    box.close()
    return data


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_file_is_refused_by_the_command_line_with_one_line_and_changes_nothing(kind, good_backup, tmp_path, capsys):
    make, words = BAD[kind]
    bad = tmp_path / "bad.zip"
    bad.write_bytes(make(good_backup))
    folder = tmp_path / "box"
    box = played(folder)
    box.close()
    before = fingerprint(folder)
    assert main(["restore", str(bad), "--data", str(folder)]) == 1
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert fingerprint(folder) == before
    with pytest.raises(BackupError):
        restore_backup(bad, folder)
    assert fingerprint(folder) == before


@pytest.mark.parametrize("kind", ["corrupt", "truncated", "another zip", "a tar.gz", "too new"])
def test_a_bad_file_is_refused_by_the_web_route_and_the_table_goes_on(kind, good_backup, tmp_path):
    make, words = BAD[kind]
    box = played(tmp_path / "box")
    try:
        box.app.extensions["companion.restart"] = lambda: pytest.fail("no restart for a bad file")
        before = box.seen()
        r = box.client.post("/api/backup/restore?lang=fr", data=make(good_backup), headers=owner_headers())
        assert r.status_code == 400 and r.json["error"] and "\n" not in r.json["error"]
        assert box.seen() == before
        assert not (tmp_path / "box" / ".restore-new").exists()
        r = box.client.post("/api/backup/restore", data=make(good_backup), headers=owner_headers())
        assert words in r.json["error"]
    finally:
        box.close()


def test_a_file_larger_than_a_backup_is_refused_before_it_is_read(tmp_path):
    from appliance.backup import MAX_BACKUP_BYTES

    box = Box(tmp_path / "a")
    try:
        r = box.client.post("/api/backup/restore", data=b"PK\x03\x04" + b"\0" * MAX_BACKUP_BYTES,
                            headers=owner_headers())
        assert r.status_code == 413 and "too large" in r.json["error"]
    finally:
        box.close()


def test_a_restore_cut_short_by_a_power_cut_is_finished_at_the_next_start(tmp_path, good_backup):
    from appliance.backup import stage_restore

    box = played(tmp_path / "box")
    box.close()
    (tmp_path / "f.zip").write_bytes(good_backup)
    stage_restore(tmp_path / "f.zip", tmp_path / "box")
    # The power goes after the store moved in, before the rest did.
    stage = tmp_path / "box" / ".restore-new"
    aside = tmp_path / "box" / (stage / "RESTORE-READY").read_text().strip()
    aside.mkdir()
    (tmp_path / "box" / "companion.db").replace(aside / "companion.db")
    (stage / "companion.db").replace(tmp_path / "box" / "companion.db")
    assert finish_pending(tmp_path / "box")
    again = Box(tmp_path / "box")
    try:
        assert [g["players"] for g in again.seen()["games"]["games"]] == [["Ann", "Ben"]]
        assert cfg.load(tmp_path / "box")["language"] == "en"      # the settings moved in too
    finally:
        again.close()


def test_the_settings_file_is_written_so_that_it_reads_back_the_same():
    settings = {"language": "fr", "speak": True, "names": ["Éloïse", "Marc-Antoine", 'quote"d'],
                "wifi_wait_s": 12.5, "port": 8001, "display": {"rotate": 2, "driver": "sh1106"},
                "leds": [5, 6], "allowed_hosts": []}
    import tomllib
    assert tomllib.loads(toml_text(settings)) == settings


def test_only_the_restore_route_takes_a_body_the_size_of_a_backup(tmp_path):
    from companion.limits import MAX_IMPORT_BYTES
    from web_support import http, running_server

    box = Box(tmp_path / "a")
    try:
        with running_server(box.app) as server:
            big = b"x" * (MAX_IMPORT_BYTES + 200_000)
            status, _, body = http(server.port, "POST", "/api/backup/restore", big, owner_headers())
            assert status == 400 and "not a companion backup" in body["error"]    # read whole, then refused
            status, _, body = http(server.port, "POST", "/api/history/import", big, pin_headers())
            assert status == 413 and "too large" in body["error"]
    finally:
        box.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (as 'companion restore' run with sudo)")
def test_a_restore_run_as_root_leaves_the_files_to_the_data_folders_owner(tmp_path, good_backup):
    folder = tmp_path / "box"
    folder.mkdir()
    os.chown(folder, 4321, 4321)
    (tmp_path / "f.zip").write_bytes(good_backup)
    restore_backup(tmp_path / "f.zip", folder)
    for item in [folder / "companion.db", folder / "companion.toml", *(folder / "backups").rglob("*")]:
        assert (item.stat().st_uid, item.stat().st_gid) == (4321, 4321), item


def test_any_byte_of_a_backup_changed_is_refused_or_restores_the_very_same_world(tmp_path, good_backup):
    """A flipped byte anywhere: a clear refusal that changes nothing, or (a
    byte no check covers: a zip header's date) the same world; never an
    exception of another kind, never another world."""
    import random

    rng = random.Random(28)
    (tmp_path / "good.zip").write_bytes(good_backup)
    restore_backup(tmp_path / "good.zip", tmp_path / "reference")
    reference = Box(tmp_path / "reference")
    expected = reference.seen()
    reference.close()
    refused = 0
    for n in range(60):
        spot = rng.randrange(len(good_backup))
        bad = bytearray(good_backup)
        bad[spot] ^= 1 << rng.randrange(8)
        file = tmp_path / f"bad-{n}.zip"
        file.write_bytes(bytes(bad))
        folder = tmp_path / f"box-{n}"
        try:
            restore_backup(file, folder)
        except BackupError as exc:
            refused += 1
            assert "\n" not in str(exc)
            assert not (folder / "companion.db").exists() and not (folder / ".restore-new").exists()
            continue
        box = Box(folder)
        try:
            assert box.seen() == expected, spot
        finally:
            box.close()
    assert refused > 40


def test_a_game_backed_up_again_after_its_reveal_is_whole_and_before_it_is_cut_again(tmp_path):
    box = Box(tmp_path / "a")
    try:
        gid = box.play(THIRD_MAN, bid(0, 6), bid(2, 3))

        def log():
            with zipfile.ZipFile(io.BytesIO(download(box))) as zf:
                return zf.read(f"games/{gid:06d}.jsonl").decode().splitlines()
        assert len(log()) == 2
        box.play(bid(1, 8), bid(3, 1))                      # revealed: the round is public
        assert len(log()) == 5 and '"card": 3' in "".join(log())
        box.play(bid(2, 0))                                 # the next round's lead (Chloé): public at once
        box.play(bid(0, 2))                                 # a secret again
        assert len(log()) == 6 and log()[-1] == '{"type": "bid", "seat": 2, "card": 0}'
    finally:
        box.close()
