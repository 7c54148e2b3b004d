"""The Backup page's look at a file before its one question
(``POST /api/backup/check``, web/backup.py): what the file is (its date,
its games) and what a restore would replace on this box (its games and
players), with nothing written, staged or changed; the owner's, like the
restore it asks about; a file a restore would refuse is refused alike."""

from __future__ import annotations

import io
import zipfile

from test_backup import Box, download, fingerprint as files_of, played, scoreboard
from test_update_web import OWNER, owner_headers
from web_support import PIN, pin_headers


def fingerprint(folder):
    """Every file's bytes, but SQLite's shared-memory index (a read moves it)."""
    return {name: digest for name, digest in files_of(folder).items() if not name.endswith("-shm")}


def check(box, body, headers):
    return box.client.post("/api/backup/check", data=body, headers=headers | {"Content-Type": "application/zip"})


def test_the_look_says_the_files_date_and_games_and_what_the_box_holds_and_changes_nothing(tmp_path):
    old = played(tmp_path / "old")
    body = download(old)
    made = zipfile.ZipFile(io.BytesIO(body)).read("companion-backup.json")
    old.close()
    box = Box(tmp_path / "now")
    try:
        box.play(scoreboard("Ann", "Ben"))
        before = fingerprint(box.folder)
        r = check(box, body, owner_headers())
        assert r.status_code == 200, r.json
        assert r.headers["Cache-Control"] == "no-store"
        look = r.json
        assert look["backup"]["games"] == 3 and look["backup"]["created_at"] in made.decode()
        assert look["backup"]["made_by"].startswith("companion ")
        assert look["box"] == {"games": 1, "players": len(box.client.get("/api/players").json["players"])}
        assert fingerprint(box.folder) == before, "a look writes nothing"
        assert not (box.folder / ".restore-new").exists()
        assert box.session.public()["game"] == "scoreboard"
    finally:
        box.close()


def test_the_look_is_the_owners_and_refuses_what_a_restore_refuses(tmp_path):
    box = Box(tmp_path / "box")
    try:
        body = download(box)
        before = fingerprint(box.folder)
        assert check(box, body, pin_headers()).status_code == 401            # the PIN is no owner
        assert check(box, body, owner_headers(PIN)).status_code == 403
        foreign = io.BytesIO()
        with zipfile.ZipFile(foreign, "w") as zf:
            zf.writestr("notes.txt", "hello")
        looked = check(box, foreign.getvalue(), owner_headers())
        restored = box.client.post("/api/backup/restore", data=foreign.getvalue(),
                                   headers=owner_headers() | {"Content-Type": "application/zip"})
        assert looked.status_code == restored.status_code == 400
        assert looked.json == restored.json and "not a companion backup" in looked.json["error"]
        assert fingerprint(box.folder) == before
        assert check(box, body, owner_headers(OWNER)).status_code == 200
    finally:
        box.close()
