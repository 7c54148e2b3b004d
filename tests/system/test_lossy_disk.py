"""The VM's lossy root disk (tests/vm/lossy_disk.py) alone: what a guest
wrote, read back, flushed and cut leaves in the disk file."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vm"))
import lossy_disk as ld  # noqa: E402

SIZE = 1 << 20


class Client:
    """A minimal NBD client: fixed newstyle, NBD_OPT_GO, simple replies."""

    def __init__(self, path: Path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(str(path))
        magic, opt, flags = struct.unpack(">QQH", ld._recv(self.s, 18))
        assert (magic, opt) == (ld.NBDMAGIC, ld.IHAVEOPT) and flags & ld.FLAG_FIXED_NEWSTYLE
        self.s.sendall(struct.pack(">I", ld.FLAG_FIXED_NEWSTYLE | ld.FLAG_NO_ZEROES))
        # A structured-reply request first, as QEMU sends: refused, not fatal.
        self.s.sendall(struct.pack(">QII", ld.IHAVEOPT, 8, 0))
        assert self._option_reply()[1] == ld.REP_ERR_UNSUP
        self.s.sendall(struct.pack(">QII", ld.IHAVEOPT, ld.OPT_GO, 6) + struct.pack(">IH", 0, 0))
        _, kind, data = self._option_reply()
        assert kind == ld.REP_INFO
        _, self.size, self.flags = struct.unpack(">HQH", data)
        assert self._option_reply()[1] == ld.REP_ACK
        self.handle = 0

    def _option_reply(self):
        magic, option, kind, length = struct.unpack(">QIII", ld._recv(self.s, 20))
        assert magic == ld.REPLY_MAGIC
        return option, kind, ld._recv(self.s, length) if length else b""

    def request(self, kind: int, offset: int = 0, length: int = 0, data: bytes = b"") -> tuple[int, bytes]:
        self.handle += 1
        self.s.sendall(struct.pack(">IHHQQI", ld.REQUEST_MAGIC, 0, kind, self.handle, offset,
                                   len(data) if kind == ld.CMD_WRITE else length) + data)
        magic, error, handle = struct.unpack(">IIQ", ld._recv(self.s, 16))
        assert magic == ld.SIMPLE_REPLY_MAGIC and handle == self.handle
        return error, (ld._recv(self.s, length) if kind == ld.CMD_READ and not error else b"")

    def write(self, offset: int, data: bytes) -> None:
        assert self.request(ld.CMD_WRITE, offset, data=data)[0] == 0

    def read(self, offset: int, length: int) -> bytes:
        error, data = self.request(ld.CMD_READ, offset, length)
        assert error == 0
        return data

    def flush(self) -> None:
        assert self.request(ld.CMD_FLUSH)[0] == 0

    def close(self) -> None:
        self.s.close()


@pytest.fixture
def disk(tmp_path):
    path = tmp_path / "root.raw"
    path.write_bytes(bytes(SIZE))
    servers = []

    def serve(**kw):
        server = ld.LossyDisk(path, tmp_path / "nbd.sock", **kw)
        servers.append(server)
        return server, Client(tmp_path / "nbd.sock")

    yield path, serve
    for server in servers:
        server.close()


def test_the_guest_reads_its_own_writes_before_a_flush(disk):
    path, serve = disk
    _, client = serve()
    assert client.size == SIZE and client.flags & ld.SEND_FLUSH and not client.flags & 8    # no FUA
    client.write(100, b"A" * 5000)             # across two pages, unaligned
    assert client.read(0, 6000) == bytes(100) + b"A" * 5000 + bytes(900)
    assert path.read_bytes()[100:5100] == bytes(5000)      # not on the card yet


def test_a_flush_makes_writes_durable_and_a_cut_loses_the_rest(disk):
    path, serve = disk
    server, client = serve()
    client.write(0, b"kept")
    client.flush()
    client.write(4096, b"lost")
    client.write(2, b"XX")                     # over flushed data: lost too
    client.close()
    cut = server.power_cut()
    assert cut["unflushed_writes"] == 2 and cut["lost_writes"] == 2 and cut["kept_writes"] == 0
    data = path.read_bytes()
    assert data[:4] == b"kept" and data[4096:4100] == bytes(4)
    # After the cut the guest (a new client) reads what the card kept.
    client = Client(path.parent / "nbd.sock")
    assert client.read(0, 4) == b"kept" and client.read(4096, 4) == bytes(4)


def test_trim_and_write_zeroes_are_held_like_writes(disk):
    path, serve = disk
    server, client = serve()
    client.write(0, b"\xff" * 8192)
    client.flush()
    assert client.request(ld.CMD_WRITE_ZEROES, 0, 4096)[0] == 0
    assert client.request(ld.CMD_TRIM, 4096, 10)[0] == 0
    assert client.read(0, 8192) == bytes(4106) + b"\xff" * (8192 - 4106)
    server.power_cut()
    assert path.read_bytes()[:8192] == b"\xff" * 8192


def test_out_of_range_requests_are_errors_not_crashes(disk):
    _, serve = disk
    _, client = serve()
    assert client.request(ld.CMD_READ, SIZE - 2, 4)[0] == ld.EINVAL
    assert client.request(ld.CMD_WRITE, SIZE - 2, data=b"1234")[0] == ld.ENOSPC
    assert client.read(0, 2) == bytes(2)        # still serving


def test_reorder_keeps_some_later_writes_and_loses_some_earlier_ones(disk):
    path, serve = disk
    server, client = serve(mode="reorder", seed=7)
    for i in range(64):
        client.write(i * 512, bytes([i + 1]) * 512)
    client.close()
    cut = server.power_cut()
    data = path.read_bytes()
    landed = [data[i * 512] == i + 1 for i in range(64)]
    assert cut["kept_writes"] == sum(landed) and 0 < sum(landed) < 64
    # Not a prefix: a later write reached the card while an earlier one did not.
    assert any(landed[j] and not landed[i] for i in range(64) for j in range(i + 1, 64))


def test_requests_buffered_before_the_cut_are_not_done_after_it(disk):
    """QEMU killed with a write and a flush still in the socket: the card had
    no power to do them."""
    path, serve = disk
    server, client = serve()
    server.cache.lock.acquire()                 # the server is busy...
    try:
        client.s.sendall(struct.pack(">IHHQQI", ld.REQUEST_MAGIC, 0, ld.CMD_WRITE, 1, 0, 4) + b"late"
                         + struct.pack(">IHHQQI", ld.REQUEST_MAGIC, 0, ld.CMD_FLUSH, 2, 0, 0))
        client.close()                          # ...when QEMU dies
    finally:
        server.cache.lock.release()
    server.power_cut()
    server.close()
    assert path.read_bytes()[:4] == bytes(4)


@pytest.mark.skipif(not shutil.which("qemu-io"), reason="qemu-io (qemu-utils) is not installed")
def test_qemu_as_the_client(disk):
    """QEMU's own NBD client, on cache=none as the VM's drive: its flush
    reaches the card, its unflushed write does not."""
    path, serve = disk
    server, client = serve()
    client.close()
    sock = path.parent / "nbd.sock"
    run = subprocess.run(["qemu-io", "-f", "raw", "-t", "none", f"nbd+unix:///?socket={sock}",
                          "-c", "write -P 0x61 0 4k", "-c", "flush", "-c", "write -P 0x62 8k 4k",
                          "-c", "read -P 0x62 8k 4k", "-c", "sigraise 9"],     # killed: no flush at exit
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == -9, run.stdout + run.stderr
    assert "read 4096/4096" in run.stdout and "verification failed" not in run.stdout, run.stdout
    server.power_cut()
    data = path.read_bytes()
    assert data[:4096] == b"a" * 4096 and data[8192:12288] == bytes(4096)


# -- aimed cuts: the card chooses the moment from what it holds -----------------------------------

def _send(client: Client, kind: int, offset: int = 0, data: bytes = b"", length: int = 0) -> None:
    """A request whose answer is not waited for (the card may never give it)."""
    client.handle += 1
    client.s.sendall(struct.pack(">IHHQQI", ld.REQUEST_MAGIC, 0, kind, client.handle, offset,
                                 len(data) if kind == ld.CMD_WRITE else length) + data)


def _answered(client: Client, timeout: float = 0.5) -> bool:
    client.s.settimeout(timeout)
    try:
        return len(client.s.recv(16)) > 0
    except (socket.timeout, OSError):
        return False
    finally:
        client.s.settimeout(None)


def test_a_burst_aim_cuts_right_after_the_nth_held_write(disk):
    """Armed for 2 held writes: the second is held, never answered, and the
    cut finds both unflushed."""
    path, serve = disk
    server, client = serve()
    client.write(0, b"flushed")
    client.flush()
    server.arm("burst", 2)
    client.write(4096, b"one")                 # answered: the card holds 1
    assert not server.fired.is_set()
    _send(client, ld.CMD_WRITE, 8192, b"two")
    assert server.fired.wait(5)
    assert server.fired_at["aim"] == "burst" and server.fired_at["held"] == 2
    assert not _answered(client)               # the card stopped there
    cut = server.power_cut()
    assert cut["unflushed_writes"] == 2 and cut["lost_writes"] == 2
    data = path.read_bytes()
    assert data[:7] == b"flushed" and data[4096:4099] == bytes(3) and data[8192:8195] == bytes(3)
    # The next boot's client is served again, unarmed.
    client = Client(path.parent / "nbd.sock")
    client.write(0, b"again")
    client.flush()
    assert path.read_bytes()[:5] == b"again"


def test_a_commit_aim_cuts_before_the_flush_is_done(disk):
    path, serve = disk
    server, client = serve()
    server.arm("commit", 1)
    client.flush()                             # nothing held: no cut there
    assert not server.fired.is_set()
    client.write(0, b"held")
    _send(client, ld.CMD_FLUSH)
    assert server.fired.wait(5) and server.fired_at == dict(server.fired_at, aim="commit", held=1)
    assert not _answered(client)               # the guest is never told "done"
    assert server.power_cut()["lost_writes"] == 1
    assert path.read_bytes()[:4] == bytes(4)   # the flush was not done


def test_a_disarmed_card_does_not_cut(disk):
    _, serve = disk
    server, client = serve()
    server.arm("burst", 1)
    assert server.disarm() is False
    client.write(0, b"x")                      # answered
    assert not server.fired.is_set()


# -- torn writes ------------------------------------------------------------------------------------

def test_a_reorder_cut_tears_some_requests_at_their_sectors(disk):
    """Requests of 8 sectors: at a reordering cut some reach the card whole,
    some not at all, some torn: a part of their sectors only."""
    path, serve = disk
    server, client = serve(mode="reorder", seed=3)
    for i in range(60):
        client.write(i * 4096, bytes([i + 1]) * 4096)
    client.close()
    cut = server.power_cut()
    data = path.read_bytes()
    whole = torn = lost = 0
    for i in range(60):
        sectors = [data[i * 4096 + s * 512:i * 4096 + (s + 1) * 512] for s in range(8)]
        landed = [s == bytes([i + 1]) * 512 for s in sectors]
        assert all(s in (bytes(512), bytes([i + 1]) * 512) for s in sectors)   # a sector is whole or untouched
        whole += all(landed)
        lost += not any(landed)
        torn += any(landed) and not all(landed)
    assert torn > 0 and whole > 0 and lost > 0
    assert (cut["kept_writes"], cut["torn_writes"], cut["lost_writes"]) == (whole, torn, lost)
    assert cut["lost_bytes"] == sum(data[i * 4096:(i + 1) * 4096].count(0) for i in range(60))


def test_a_single_sector_never_tears():
    rng = __import__("random").Random(1)
    assert ld.tear(512, rng) is None and ld.tear(100, rng) is None
    for _ in range(200):
        chosen = ld.tear(4096, rng)
        assert 0 < len(chosen) < 8 and set(chosen) <= set(range(8))


# -- a card that lies about its flushes --------------------------------------------------------------

def test_a_card_that_lies_about_a_flush_loses_what_it_said_it_kept(disk):
    """The limit of what software can promise: the guest did all it could
    (write, flush, told "done"), and the cut still loses it."""
    path, serve = disk
    server, client = serve(lies=True)
    client.write(0, b"acknowledged")
    client.flush()                             # answered: "done"
    assert client.read(0, 12) == b"acknowledged"
    cut = server.power_cut()
    assert cut["lost_writes"] == 1 and server.stats["lied_flushes"] == 1
    assert path.read_bytes()[:12] == bytes(12)


# -- the logged write stream and its undo ------------------------------------------------------------

def test_the_log_and_its_undo_rebuild_the_card_at_each_flush(disk, tmp_path):
    """The card's logged stream (writes, flushes) and the pages as they were
    before the log changed them rebuild the card as it was at the log's
    start and after each flush: what the replay of crash states stands on."""
    import crash_states as cs

    path, serve = disk
    path.write_bytes(bytes(range(256)) * (SIZE // 256))
    server, client = serve(mode="reorder", seed=5)
    client.write(0, b"before the log")
    server.cache.start_log()                   # the held write is the log's first
    start = path.read_bytes()
    snapshots = []
    for round_ in range(3):
        client.write(4096 * round_ + 100, bytes([0xA0 + round_]) * 3000)
        client.write(70000, bytes([round_]) * 9000)
        client.flush()
        snapshots.append(path.read_bytes())
    client.write(4096, b"\xee" * 4096)          # held at the cut: kept, torn or lost
    client.close()
    server.power_cut()
    log, undo = server.cache.stop_log()
    spans = cs.intervals(log)
    assert [len(s.writes) for s in spans] == [3, 2, 2, 1]
    assert all(s.flushed_at for s in spans[:3]) and spans[3].flushed_at is None
    image = tmp_path / "copy.raw"
    image.write_bytes(path.read_bytes())
    work = cs.Work(image, undo)
    assert image.read_bytes() == start
    for span, snapshot in zip(spans, snapshots):
        work.patch(span.writes)
        assert image.read_bytes() == snapshot
    work.close()


def test_every_crash_state_of_an_interval_is_checked_and_undone(tmp_path):
    """check_cycle writes each crash state into the image (S_k and a subset
    of the interval's writes, torn ones by their sectors), asks the check
    with the flush that ended it, and undoes it before the next."""
    import random

    import crash_states as cs

    image = tmp_path / "card.raw"
    image.write_bytes(bytes(65536))
    log = [("w", 0, b"\x01" * 1024), ("w", 4096, b"\x02" * 512), ("f", 10.0),
           ("w", 8192, b"\x03" * 2048), ("w", 0, b"\x04" * 512), ("w", 12288, b"\x05" * 512), ("f", 20.0),
           ("w", 16384, b"\x06" * 4096)]
    seen = []

    def check(path, flushed_at, lying=False):
        assert lying == (not seen)
        seen.append((flushed_at, path.read_bytes()))
        return 0

    out = cs.check_cycle(image, log, {}, check, random.Random(2))
    lying = seen.pop(0)
    assert lying == (None, bytes(65536))        # S0, every acknowledgement required
    # Interval 1 (2 writes): 4 subsets + 1 tear of its 2-sector write; interval 2
    # (3 writes): 8 subsets + 1 tear; the cut's (1 write): 2 subsets + 1 tear.
    assert out["crash_states_checked"] == len(seen) == 5 + 9 + 3 and out["intervals"] == 3
    assert [f for f, _ in seen] == [10.0] * 5 + [20.0] * 9 + [None] * 3
    for flushed_at in (10.0, 20.0, None):       # within an interval, all different (across
        data = [d for f, d in seen if f == flushed_at]      # them, S_k is both the last "all"
        assert len(set(data)) == len(data)                   # and the next "none", asked differently)
    states = {data for _, data in seen}
    s1 = bytearray(65536)
    s1[0:1024], s1[4096:4608] = b"\x01" * 1024, b"\x02" * 512
    assert bytes(65536) in states and bytes(s1) in states
    torn = [data for _, data in seen if 0 < data[:1024].count(1) < 1024]
    assert torn and all(data[:1024].count(1) % 512 == 0 for data in torn)
    # Every state was undone: the image ends as the last interval's writes over S2.
    s2 = bytearray(s1)
    s2[8192:10240], s2[0:512], s2[12288:12800] = b"\x03" * 2048, b"\x04" * 512, b"\x05" * 512
    assert bytes(s2) in states
    s2[16384:20480] = b"\x06" * 4096
    assert image.read_bytes() == bytes(s2)


def test_a_long_interval_is_sampled_and_the_cycle_capped(tmp_path, monkeypatch):
    import random

    import crash_states as cs

    writes = [(i * 4096, bytes([i]) * 4096) for i in range(40)]
    chosen = cs.states(writes, random.Random(1))
    assert len(chosen) == 2 + cs.SAMPLE + cs.TEARS
    assert [False] * 40 in chosen and [True] * 40 in chosen
    assert any(isinstance(c, list) for state in chosen for c in state)       # torn writes among them
    monkeypatch.setattr(cs, "MAX_STATES", 10)
    image = tmp_path / "card.raw"
    image.write_bytes(bytes(40 * 4096))
    out = cs.check_cycle(image, [("w", o, d) for o, d in writes], {}, lambda p, f, lying=False: 0, random.Random(1),
                         lying=False)
    assert out["crash_states_checked"] == 10 and out["capped"]


# -- the host's check of a card copy: e2fsck, the journal, the store ----------------------------

E2FS = all(shutil.which(t) for t in ("mkfs.ext4", "debugfs", "e2fsck", "e2undo"))


def _card_with_store(tmp_path: Path, lines: list[str]) -> tuple[Path, Path]:
    """A small ext4 card (mkfs.ext4 -d) holding a store as the box keeps it."""
    import sqlite3

    from companion.store import SCHEMA

    root = tmp_path / "root"
    state = root / "var/lib/companion"
    state.mkdir(parents=True)
    db = sqlite3.connect(state / "companion.db")
    db.executescript(SCHEMA)
    db.execute("INSERT INTO games (id, game, players, started, updated) VALUES (1, 'scoreboard', '[]', 0, 0)")
    db.executemany("INSERT INTO actions VALUES (1, ?, ?, 0)", list(enumerate(lines, 1)))
    db.commit()
    db.close()
    image = tmp_path / "card.raw"
    subprocess.run(["truncate", "-s", "32M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-b", "4096", "-d", str(root), str(image)], check=True)
    return image, state / "companion.db"


def _blocks(image: Path, name: str) -> list[int]:
    """The card's physical blocks of a file, in order."""
    size = int(subprocess.run(["debugfs", "-R", f"stat {name}", str(image)], capture_output=True, text=True)
               .stdout.split("Size: ")[1].split()[0])
    return [int(subprocess.run(["debugfs", "-R", f"bmap {name} {i}", str(image)], capture_output=True,
                               text=True).stdout.strip()) for i in range((size + 4095) // 4096)]


@pytest.mark.skipif(not E2FS, reason="e2fsprogs (mkfs.ext4, debugfs, e2fsck, e2undo) is not installed")
def test_the_host_reads_the_store_off_a_card_copy_and_sees_damage(tmp_path):
    import host_check

    image, _ = _card_with_store(tmp_path, ['{"type": "add", "seat": 0, "points": 3}', '{"type": "x"}'])
    copy = host_check.copy_card(image, tmp_path)
    try:
        assert host_check.fsck(copy)["clean"]
        store = host_check.read_store(copy, undo_dir=tmp_path)
        assert store["integrity"] == ["ok"] and store["game"] == 1 and len(store["lines"]) == 2
        assert "companion.db" in store["files"]
    finally:
        host_check.drop_copy(copy)
    # Damage the header of the store's second page (a table's b-tree) on the card: SQLite sees it.
    block = _blocks(image, "/var/lib/companion/companion.db")[1]
    with open(image, "r+b") as f:
        f.seek(block * 4096)
        f.write(b"\xde\xad" * 8)
    assert host_check.read_store(image, replay=False)["integrity"] != ["ok"]
    # Damage the file system (a used block marked free): e2fsck -fn sees it.
    subprocess.run(["debugfs", "-w", "-R", f"freeb {block}", str(image)], check=True, capture_output=True)
    checked = host_check.fsck(image)
    assert not checked["clean"] and "differences" in checked["output"]


@pytest.mark.skipif(not E2FS, reason="e2fsprogs (mkfs.ext4, debugfs, e2fsck, e2undo) is not installed")
def test_the_store_is_read_after_the_journals_replay_and_the_image_put_back(tmp_path):
    """A transaction committed in the journal but not yet in place (as a cut
    leaves it): read without the replay, the store is the old one; with it,
    the new one; and the replay is undone (the image as it was)."""
    import sqlite3

    import host_check

    old = ['{"n": 1}', '{"n": 2}']
    image, db_path = _card_with_store(tmp_path, old)
    db = sqlite3.connect(db_path)
    db.execute("UPDATE actions SET line = ? WHERE seq = 2", ('{"n": 9}',))      # same length: same pages
    db.commit()
    db.close()
    new = db_path.read_bytes()
    blocks = _blocks(image, "/var/lib/companion/companion.db")
    assert len(new) == len(blocks) * 4096
    journal = []
    with open(image, "rb") as f:
        for i, block in enumerate(blocks):
            f.seek(block * 4096)
            if f.read(4096) != new[i * 4096:(i + 1) * 4096]:
                page = tmp_path / f"page{i}"
                page.write_bytes(new[i * 4096:(i + 1) * 4096])
                journal.append(f"jw -b {block} {page}")
    assert journal
    commands = "\n".join(["jo", *journal, "jc"]) + "\n"
    subprocess.run(["debugfs", "-w", "-f", "-", str(image)], input=commands, text=True, check=True,
                   capture_output=True)
    before = image.read_bytes()
    assert json_lines(host_check.read_store(image, replay=False)) == old
    assert json_lines(host_check.read_store(image, undo_dir=tmp_path)) == ['{"n": 1}', '{"n": 9}']
    assert image.read_bytes() == before            # the replay undone
    checked = host_check.fsck(image)
    assert checked["clean"] and checked["journal_replayed"]


def json_lines(store: dict) -> list[str]:
    assert store["integrity"] == ["ok"], store
    return store["lines"]
