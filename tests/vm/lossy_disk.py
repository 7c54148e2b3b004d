"""The VM's root disk as an SD card sees a power cut: an NBD server that
holds every write the guest has not flushed in memory, as a card's volatile
cache does, and at a cut loses them (or, in "reorder" runs, keeps a random
subset of them, as a card that wrote part of its cache back in its own
order would).

QEMU's drive is this server on a Unix socket with ``cache=none``: QEMU keeps
no cache of its own, and the guest's flushes (the kernel's cache flush
requests: fsync, the ext4 journal's commits) become NBD_CMD_FLUSH.  A FLUSH
writes the held writes to the disk file and fsyncs it, then answers; only
then is the guest told its data is durable.

What it models: a disk with a write-back cache of unbounded size that honours
flushes, loses everything since the last flush at a cut, or persists an
arbitrary subset of it (any order, at the granularity of the guest's write
requests).  What it does not: writes torn inside one request, a card that
lies about flushes, wear-levelling or its metadata being lost, bit rot,
corruption of data flushed long ago.

Prior art: LazyFS (Jepsen), ALICE (OSDI'14), dm-log-writes.

The protocol: fixed-newstyle handshake, NBD_OPT_GO/INFO/EXPORT_NAME/ABORT/
LIST; simple replies only; READ, WRITE, FLUSH, TRIM, WRITE_ZEROES, DISC.
Standard library only: it runs with the host's ``python3``, on a thread of
the harness (``LossyDisk``) or alone (``python3 lossy_disk.py FILE SOCKET``).
"""

from __future__ import annotations

import os
import random
import socket
import struct
import sys
import threading
from pathlib import Path

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698

FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2
OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST, OPT_INFO, OPT_GO = 1, 2, 3, 6, 7
REP_ACK, REP_SERVER, REP_INFO = 1, 2, 3
REP_ERR_UNSUP, REP_ERR_INVALID = 2**31 + 1, 2**31 + 3
INFO_EXPORT = 0
# Transmission flags.  No SEND_FUA: QEMU then follows a write the guest marks
# "force unit access" by a FLUSH, which this server honours.
HAS_FLAGS, SEND_FLUSH, SEND_TRIM, SEND_WRITE_ZEROES = 1, 4, 32, 64
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM, CMD_WRITE_ZEROES = 0, 1, 2, 3, 4, 6
EIO, EINVAL, ENOSPC = 5, 22, 28

MODES = ("drop", "reorder")


class ProtocolError(Exception):
    pass


class PowerGone(Exception):
    """A request of a client from before the cut (still in the socket's
    buffer when QEMU was killed): the card had no power to do it."""


def _recv(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ProtocolError("the client went away")
        buf += chunk
    return bytes(buf)


class Cache:
    """The card's volatile cache over the disk file: writes since the last
    flush, in the order they came, and what a read sees (them over the file)."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.pending: list[tuple[int, bytes]] = []
        # What the guest reads back: the newest unflushed bytes, per 4 KiB page.
        self.pages: dict[int, bytearray] = {}
        self.lock = threading.Lock()
        self.epoch = 0          # grows at each cut: requests of an older client are refused
        self.stats = {"writes": 0, "flushes": 0, "cuts": 0, "lost_writes": 0, "kept_writes": 0,
                      "lost_bytes": 0}

    PAGE = 4096

    def _page(self, index: int) -> bytearray:
        page = self.pages.get(index)
        if page is None:
            start = index * self.PAGE
            page = bytearray(os.pread(self.fd, min(self.PAGE, self.size - start), start))
            self.pages[index] = page
        return page

    def _alive(self, epoch: int | None) -> None:
        if epoch is not None and epoch != self.epoch:
            raise PowerGone()

    def read(self, offset: int, length: int, epoch: int | None = None) -> bytes:
        with self.lock:
            self._alive(epoch)
            if not self.pages:
                return os.pread(self.fd, length, offset)
            out = bytearray()
            pos, end = offset, offset + length
            while pos < end:
                index, skip = divmod(pos, self.PAGE)
                take = min(self.PAGE - skip, end - pos)
                page = self.pages.get(index)
                out += page[skip:skip + take] if page is not None else os.pread(self.fd, take, pos)
                pos += take
            return bytes(out)

    def write(self, offset: int, data: bytes, epoch: int | None = None) -> None:
        with self.lock:
            self._alive(epoch)
            self.pending.append((offset, data))
            self.stats["writes"] += 1
            pos, end, at = offset, offset + len(data), 0
            while pos < end:
                index, skip = divmod(pos, self.PAGE)
                take = min(self.PAGE - skip, end - pos)
                self._page(index)[skip:skip + take] = data[at:at + take]
                pos, at = pos + take, at + take

    def flush(self, epoch: int | None = None) -> None:
        """Make every held write durable in the file (then the guest is told)."""
        with self.lock:
            self._alive(epoch)
            for index, page in sorted(self.pages.items()):
                os.pwrite(self.fd, page, index * self.PAGE)
            os.fsync(self.fd)
            self.pending.clear()
            self.pages.clear()
            self.stats["flushes"] += 1

    def power_loss(self, rng: random.Random | None = None) -> dict:
        """The cut: the held writes are lost; with ``rng`` ("reorder"), each
        of them reaches the file or not, independently (so a later write may
        land while an earlier one is lost)."""
        with self.lock:
            kept = [w for w in self.pending if rng is not None and rng.random() < 0.5]
            for offset, data in kept:
                os.pwrite(self.fd, data, offset)
            os.fsync(self.fd)
            lost = len(self.pending) - len(kept)
            cut = {"unflushed_writes": len(self.pending), "kept_writes": len(kept), "lost_writes": lost,
                   "lost_bytes": sum(len(d) for _, d in self.pending) - sum(len(d) for _, d in kept)}
            self.epoch += 1
            self.stats["cuts"] += 1
            self.stats["lost_writes"] += lost
            self.stats["kept_writes"] += len(kept)
            self.stats["lost_bytes"] += cut["lost_bytes"]
            self.pending.clear()
            self.pages.clear()
            return cut

    def close(self) -> None:
        os.close(self.fd)


class LossyDisk:
    """The server on a Unix socket, serving one file, one client at a time
    (QEMU's drive).  ``power_cut()`` after QEMU is killed; ``close()``
    after a clean power-off (QEMU's DISC: its flushes went through)."""

    def __init__(self, path: Path, sock_path: Path, *, mode: str = "drop", seed: int | None = None):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {MODES}")
        self.path, self.sock_path, self.mode = Path(path), Path(sock_path), mode
        self.rng = random.Random(seed)
        self.cache = Cache(self.path)
        self.sock_path.unlink(missing_ok=True)
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(str(self.sock_path))
        self.listener.listen(1)
        self.conn: socket.socket | None = None
        self.closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True, name="lossy-disk")
        self._thread.start()

    @property
    def stats(self) -> dict:
        return dict(self.cache.stats, mode=self.mode)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return          # closed
            self.conn = conn
            try:
                if self._handshake(conn):
                    self._transmit(conn)
            except (ProtocolError, PowerGone, OSError):
                pass            # the client went away (QEMU killed or powered off)
            finally:
                conn.close()
                self.conn = None

    # -- the handshake -------------------------------------------------------------------------
    def _handshake(self, conn: socket.socket) -> bool:
        conn.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
        (client_flags,) = struct.unpack(">I", _recv(conn, 4))
        no_zeroes = bool(client_flags & FLAG_NO_ZEROES)
        flags = HAS_FLAGS | SEND_FLUSH | SEND_TRIM | SEND_WRITE_ZEROES
        while True:
            magic, option, length = struct.unpack(">QII", _recv(conn, 16))
            if magic != IHAVEOPT:
                raise ProtocolError("bad option magic")
            data = _recv(conn, length) if length else b""
            if option == OPT_EXPORT_NAME:
                conn.sendall(struct.pack(">QH", self.cache.size, flags) + (b"" if no_zeroes else bytes(124)))
                return True
            if option == OPT_ABORT:
                self._reply(conn, option, REP_ACK)
                return False
            if option == OPT_LIST:
                self._reply(conn, option, REP_SERVER, struct.pack(">I", 0))
                self._reply(conn, option, REP_ACK)
            elif option in (OPT_INFO, OPT_GO):
                if len(data) < 6:
                    self._reply(conn, option, REP_ERR_INVALID)
                    continue
                self._reply(conn, option, REP_INFO, struct.pack(">HQH", INFO_EXPORT, self.cache.size, flags))
                self._reply(conn, option, REP_ACK)
                if option == OPT_GO:
                    return True
            else:       # structured replies, meta contexts, TLS...: not offered
                self._reply(conn, option, REP_ERR_UNSUP)

    @staticmethod
    def _reply(conn: socket.socket, option: int, kind: int, data: bytes = b"") -> None:
        conn.sendall(struct.pack(">QIII", REPLY_MAGIC, option, kind, len(data)) + data)

    # -- transmission --------------------------------------------------------------------------
    def _transmit(self, conn: socket.socket) -> None:
        cache = self.cache
        epoch = cache.epoch
        while True:
            magic, _flags, kind, handle, offset, length = struct.unpack(">IHHQQI", _recv(conn, 28))
            if magic != REQUEST_MAGIC:
                raise ProtocolError("bad request magic")
            data = _recv(conn, length) if kind == CMD_WRITE else b""
            if kind == CMD_DISC:
                return
            error, payload = 0, b""
            if kind in (CMD_READ, CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES) and offset + length > cache.size:
                error = ENOSPC if kind != CMD_READ else EINVAL
            elif kind == CMD_READ:
                payload = cache.read(offset, length, epoch)
            elif kind == CMD_WRITE:
                cache.write(offset, data, epoch)
            elif kind in (CMD_WRITE_ZEROES, CMD_TRIM):
                # A trimmed range may read back as anything: zeros, held like
                # any other write until a flush.
                cache.write(offset, bytes(length), epoch)
            elif kind == CMD_FLUSH:
                try:
                    cache.flush(epoch)
                except OSError:
                    error = EIO
            else:
                error = EINVAL
            conn.sendall(struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, error, handle) + payload)

    # -- the harness's side ----------------------------------------------------------------------
    def power_cut(self, reorder: bool | None = None, rng: random.Random | None = None) -> dict:
        """After QEMU was killed: the card loses its power.  ``reorder``
        overrides the server's mode for this cut, ``rng`` its random draws."""
        if reorder is None:
            reorder = self.mode == "reorder"
        conn = self.conn
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return self.cache.power_loss((rng or self.rng) if reorder else None)

    def close(self) -> None:
        """Stop serving.  Writes still held (a client that left without
        flushing) are lost, as at a cut."""
        if self.closed:
            return
        self.closed = True
        for how in (lambda: self.listener.shutdown(socket.SHUT_RDWR), self.listener.close):
            try:
                how()           # shutdown wakes the thread's accept()
            except OSError:
                pass
        self.sock_path.unlink(missing_ok=True)
        self.power_cut()
        self._thread.join(5)
        self.cache.close()


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3, 4):
        print("usage: lossy_disk.py FILE SOCKET [drop|reorder [SEED]]", file=sys.stderr)
        return 2
    mode = argv[2] if len(argv) > 2 else "drop"
    seed = int(argv[3]) if len(argv) > 3 else None
    disk = LossyDisk(Path(argv[0]), Path(argv[1]), mode=mode, seed=seed)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    print(disk.power_cut())
    disk.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
