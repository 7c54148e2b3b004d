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
