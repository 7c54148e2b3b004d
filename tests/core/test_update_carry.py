"""A rollback keeps every action the new version acknowledged.

After the switch the new version serves the table while root checks it
(ready, fewer than 3 crashes, 15 s up).  Here it acknowledges actions — more
lines of the game at the table, a new game, a secret taken back, a player
renamed — and then fails its check.  Root puts the pre-update copy of the
store back, and keeps the new version's store beside it (two more names, no
copy, nothing of it read by root); the start of the version the box went
back to replays it onto its own store (companion/carry_back.py).  After it,
every acknowledged action is in the store, and what does not replay on the
old version is named and kept, never dropped.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from appliance import runner
from appliance.root import updater
from appliance.root.updater import Installer
from companion import carry_back
from companion.roster import Roster
from companion.session import TableSession
from companion.store import Store
from test_update import Cut, _box, keys, make_bundle  # noqa: F401 (fixtures)
from test_update_faults import QuickSystem

THIRD_MAN = {"type": "new_game", "game": "third-man", "players": ["Éloïse", "Marc-Antoine", "Cat", "Dan"]}


def bid(seat, card):
    return {"type": "bid", "seat": seat, "card": card}


def _logs(data: Path) -> dict[int, list[str]]:
    store = Store(data)
    try:
        return {g.id: store.lines(g.id) for g in store.games()}
    finally:
        store.close()


def _serves_then_fails(lay, acted, *, before_failing=None):
    """The new version's life once switched to: it serves the table (its
    session on the store, each action acknowledged when submit returns),
    then crashes until root gives up on it."""
    def health(release):
        assert updater.release_of(lay.current) == "2.0"
        store = Store(lay.data)
        session = TableSession(store)
        for action in acted:
            session.submit(action)           # returned: acknowledged to the table
        for hook in (None, before_failing):
            if hook is not None:
                hook(store, session)
            try:                                 # what the table was told so far
                health.acknowledged = {g.id: store.lines(g.id) for g in store.games()}
                health.roster = sorted(p.name for p in store.roster())
                health.seats = store.seat_players()
                health.public = session.public()
            except sqlite3.Error:                # a layout of its own, made after the actions
                pass
        # A crash, not a clean stop: the files as the last commit left them
        # on the card, write-ahead log included (a close would fold it in).
        if store.db is not None:
            crashed = {p.name: p.read_bytes() for p in lay.data.glob("companion.db*")}
            store.close()
            for path in lay.data.glob("companion.db*"):
                path.unlink()
            for name, data in crashed.items():
                if not name.endswith("-shm"):
                    (lay.data / name).write_bytes(data)
        return "it crashed 3 times"
    return health


def _start(lay):
    """What the companion's start does on the version gone back to: the
    store, then what comes after its opening, then the session."""
    store = Store(lay.data)
    runner._after_open(store, lay.data)
    return store, TableSession(store)


def _rolled_back(tmp_path, keys, make_bundle, acted, **kw):
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    inst = Installer(lay, system, machine="x86_64")
    before = _logs(lay.data)
    system.health = _serves_then_fails(lay, acted, **kw)
    result = inst.install(make_bundle("2.0"))
    assert result["state"] == "failed" and updater.release_of(lay.current) == "1.0", result
    assert _logs(lay.data) == before, "the pre-update copy is what root put back"
    return lay, system.health, before


def test_every_action_the_new_version_acknowledged_is_in_the_store_after_the_rollback(tmp_path, keys, make_bundle):
    acted = [{"type": "add", "seat": 0, "points": 5},          # the game at the table goes on
             {"type": "add", "seat": 1, "points": 2},
             THIRD_MAN, bid(0, 5), bid(1, 7)]                  # a new game, started on 2.0
    lay, new, before = _rolled_back(tmp_path, keys, make_bundle, acted)
    kept = carry_back.kept_stores(lay.data)
    assert [p.name.split("-")[2] for p in kept] == ["2.0"]
    store, session = _start(lay)
    try:
        logs = {g.id: store.lines(g.id) for g in store.games()}
        assert logs == new.acknowledged
        assert session.public() == new.public            # the table picks up where 2.0 left it
        assert not carry_back.kept_stores(lay.data) and not list(lay.data.glob("rolled-back-*"))
        notices = [template.format(**params) for template, params in session.table.notices]
        assert "Version 2.0 was rolled back; the actions taken on it are kept (5)." in notices
    finally:
        store.close()
    # The next start has nothing more to carry, and says nothing more.
    store, session = _start(lay)
    try:
        assert {g.id: store.lines(g.id) for g in store.games()} == new.acknowledged
        assert not [t for t, _ in session.table.notices if "rolled back" in t]
    finally:
        store.close()


def test_a_secret_taken_back_on_the_new_version_is_gone_after_the_rollback_too(tmp_path, keys, make_bundle):
    lay, _system, _inst = _box(tmp_path, keys)
    store = Store(lay.data)
    session = TableSession(store)
    session.submit(THIRD_MAN)
    session.submit(bid(0, 5))
    session.submit(bid(1, 7))                                  # entered before the update, unrevealed
    store.close()
    system = QuickSystem(lay)
    system.health = new = _serves_then_fails(lay, [{"type": "undo"}, bid(1, 3), bid(2, 8)])
    assert Installer(lay, system, machine="x86_64").install(make_bundle("2.0"))["state"] == "failed"
    store, session = _start(lay)
    try:
        game = store.latest_unfinished().id
        assert store.lines(game) == new.acknowledged[game]
        assert not any('"card": 7' in line for line in store.lines(game))
        assert session.public() == new.public
    finally:
        store.close()


def test_a_new_name_and_a_merge_on_the_new_version_come_back_too(tmp_path, keys, make_bundle):
    def roster(store, session):
        table = Roster(session)
        ids = {p.name: p.id for p in table.players()}
        table.rename(ids["Éloïse"], "Éloïse B.")
        other = table.add("Chloé")
        session.submit({"type": "new_game", "game": "scoreboard", "players": ["Chloé", "Marc-Antoine"]})
        table.merge(other.id, ids["Marc-Antoine"])
    lay, new, _before = _rolled_back(tmp_path, keys, make_bundle, [], before_failing=roster)
    store, session = _start(lay)
    try:
        assert sorted(p.name for p in store.roster()) == new.roster == ["Marc-Antoine", "Éloïse B."]
        assert store.seat_players() == new.seats
        assert {g.id: store.lines(g.id) for g in store.games()} == new.acknowledged
    finally:
        store.close()


def test_actions_that_do_not_replay_on_the_old_version_are_kept_and_named(tmp_path, keys, make_bundle):
    """A newer version may know a game or a field the old one refuses: the
    game keeps what replays, its whole log is kept for ``companion import``,
    and the table is told which game and where."""
    def newer(store, session):
        gid = store.latest_unfinished().id
        # What 2.0 would write and 1.0 does not know: a move of a newer kind.
        store.append(gid, len(store.lines(gid)) + 1, json.dumps({"type": "double", "seat": 0}), False, None)
        store.create_game("pétanque", ["Éloïse", "Dan"], json.dumps(
            {"type": "new_game", "game": "pétanque", "players": ["Éloïse", "Dan"]}), public={})
    lay, new, _before = _rolled_back(tmp_path, keys, make_bundle, [{"type": "add", "seat": 0, "points": 5}],
                                     before_failing=newer)
    store, session = _start(lay)
    try:
        table_game = store.latest_unfinished()
        assert store.lines(table_game.id) == new.acknowledged[table_game.id][:-1]    # all but the new kind
        notices = [template.format(**params) for template, params in session.table.notices]
        kept = sorted((lay.data / carry_back.FOLDER).iterdir())
        assert len(kept) == 2
        for path in kept:
            gid = int(path.name.split("-")[1])
            assert path.read_text().splitlines() == new.acknowledged[gid]           # every line, as 2.0 kept it
            assert any(f"Game {gid} " in n and str(carry_back.FOLDER / path.name) in n for n in notices), notices
        assert "Version 2.0 was rolled back; the actions taken on it are kept (1)." in notices
        assert not store.game(max(new.acknowledged))                                 # pétanque is not a game here
    finally:
        store.close()


def test_a_store_the_new_version_moved_to_its_own_format_is_still_carried(tmp_path, keys, make_bundle):
    def migrate(store, session):
        store.db.execute("ALTER TABLE games ADD COLUMN device TEXT")
        store.db.execute("CREATE TABLE new_things (x)")
        store.db.execute("PRAGMA user_version=2")
        session.submit({"type": "add", "seat": 1, "points": 4})
    lay, new, _before = _rolled_back(tmp_path, keys, make_bundle, [{"type": "add", "seat": 0, "points": 1}],
                                     before_failing=migrate)
    store, _session = _start(lay)
    try:
        assert {g.id: store.lines(g.id) for g in store.games()} == new.acknowledged
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == 1
    finally:
        store.close()


@pytest.mark.parametrize("change,carried", [("ALTER TABLE actions RENAME TO moves", False),
                                             ("ALTER TABLE actions RENAME COLUMN line TO record", True)],
                         ids=["no actions table", "another column"])
def test_a_store_the_old_version_cannot_read_whole_is_kept_and_said(tmp_path, keys, make_bundle, change, carried):
    """Read as far as it can be (the store's own salvage), carried as far as
    it is read, and the whole file kept under a name no start reads again."""
    lay, new, before = _rolled_back(tmp_path, keys, make_bundle, [{"type": "add", "seat": 0, "points": 1}],
                                    before_failing=lambda store, session: store.db.execute(change))
    store, session = _start(lay)
    try:
        assert {g.id: store.lines(g.id) for g in store.games()} == (new.acknowledged if carried else before)
        unread = list(lay.data.glob("rolled-back-2.0-*.db.unread"))
        assert len(unread) == 1 and unread[0].stat().st_size > 0
        assert not carry_back.kept_stores(lay.data)
        notices = [template.format(**params) for template, params in session.table.notices]
        said = "could be read only in part" if carried else "could not be read"
        assert any(unread[0].name in n and said in n for n in notices), notices
    finally:
        store.close()


def test_a_cut_during_the_rollback_keeps_the_new_store_once_and_the_boot_finishes_it(tmp_path, keys, make_bundle):
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    system.health = new = _serves_then_fails(lay, [{"type": "add", "seat": 0, "points": 9}])
    real = updater.restore_store

    def cut(src, data_dir):
        raise Cut("restoring the store")
    updater.restore_store = cut
    try:
        with pytest.raises(Cut):
            Installer(lay, system, machine="x86_64").install(make_bundle("2.0"))
    finally:
        updater.restore_store = real
    assert len(carry_back.kept_stores(lay.data)) == 1
    reboot = Installer(lay, system, machine="x86_64")
    reboot.recover()                                  # the boot, before the service
    assert updater.release_of(lay.current) == "1.0" and not lay.marker.exists()
    assert len(carry_back.kept_stores(lay.data)) == 1, "the same store is not kept twice"
    store, _session = _start(lay)
    try:
        assert {g.id: store.lines(g.id) for g in store.games()} == new.acknowledged
    finally:
        store.close()


def test_carrying_twice_is_carrying_once(tmp_path, keys, make_bundle):
    """A cut after the store took the actions in, before the kept files went."""
    lay, new, _before = _rolled_back(tmp_path, keys, make_bundle, [{"type": "add", "seat": 0, "points": 5}, THIRD_MAN])
    kept = carry_back.kept_stores(lay.data)[0]
    copies = {p.name: p.read_bytes() for p in lay.data.glob(kept.name + "*")}
    store, _session = _start(lay)
    store.close()
    for name, data in copies.items():
        (lay.data / name).write_bytes(data)
    store, _session = _start(lay)
    try:
        assert {g.id: store.lines(g.id) for g in store.games()} == new.acknowledged
    finally:
        store.close()


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_root_keeps_nothing_but_the_services_own_store(tmp_path, keys, make_bundle, how):
    """Root gives a second name only to a plain file of the service's own:
    a link the new version planted at the store's name (to a file of
    root's) gets none, and nothing of that file reaches the service."""
    secret = tmp_path / "outside" / "shadow"
    secret.parent.mkdir()
    secret.write_bytes(b"root:$6$secret\n")

    def plant(store, session):
        store.close()
        store.db = None                                   # nothing more of 2.0 on the card
        for name in ("companion.db", "companion.db-wal"):
            (lay.data / name).unlink(missing_ok=True)
        if how == "symlink":
            (lay.data / "companion.db").symlink_to(secret)
        else:
            os.chown(lay.data, 65534, 65534)              # the service's folder, not root's
            os.link(secret, lay.data / "companion.db")
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    system.health = _serves_then_fails(lay, [], before_failing=plant)
    Installer(lay, system, machine="x86_64").install(make_bundle("2.0"))
    assert not carry_back.kept_stores(lay.data)
    assert os.stat(secret).st_nlink == 1 and secret.read_bytes() == b"root:$6$secret\n"
    assert not (lay.data / "companion.db").is_symlink()        # the pre-update copy, put back


def test_the_kept_store_is_never_opened_by_root(tmp_path, keys, make_bundle, monkeypatch):
    """Root's side of the rollback opens no SQLite file of the service's."""
    opened = []
    real = sqlite3.connect

    def spy(path, *a, **k):
        opened.append(str(path))
        return real(path, *a, **k)
    lay, _system, _inst = _box(tmp_path, keys)
    system = QuickSystem(lay)
    system.health = _serves_then_fails(lay, [{"type": "add", "seat": 0, "points": 5}])
    inst = Installer(lay, system, machine="x86_64")
    real_revert = inst._revert

    def revert(marker):
        monkeypatch.setattr(sqlite3, "connect", spy)
        try:
            return real_revert(marker)
        finally:
            monkeypatch.setattr(sqlite3, "connect", real)
    inst._revert = revert
    inst.install(make_bundle("2.0"))
    assert opened == [] and carry_back.kept_stores(lay.data)


def test_a_name_taken_already_is_not_a_reason_to_lose_the_store(tmp_path):
    """Two rollbacks in the same second, or a name the service put there:
    the store is kept under the next name, which the start still finds."""
    data = tmp_path / "data"
    Store(data).close()
    (data / "rolled-back-2.0-1000.db").write_bytes(b"something else")
    kept = updater.keep_new_store(data, "2.0", clock=lambda: 1000.5)
    assert kept == "rolled-back-2.0-1001.db"
    assert [p.name for p in carry_back.kept_stores(data)] == ["rolled-back-2.0-1000.db", kept]
    assert os.path.samefile(data / kept, data / "companion.db")
