"""The VM's root disk as an SD card sees a power cut: an NBD server that
holds every write the guest has not flushed in memory, as a card's volatile
cache does, and at a cut loses them (or, in "reorder" cuts, keeps a random
subset of them, some torn, as a card that wrote part of its cache back in
its own order would).

QEMU's drive is this server on a Unix socket with ``cache=none``: QEMU keeps
no cache of its own, and the guest's flushes (the kernel's cache flush
requests: fsync, the ext4 journal's commits) become NBD_CMD_FLUSH.  A FLUSH
writes the held writes to the disk file and fsyncs it, then answers; only
then is the guest told its data is durable.

What it models: a disk with a write-back cache of unbounded size that honours
flushes and, at a cut, loses everything since the last flush, or persists an
arbitrary subset of it (any order, at the granularity of the guest's write
requests), some of those requests **torn** (a random part of their 512-byte
sectors written, the rest not).  What it does not: a card that lies about
flushes (``lies=True`` shows once what that does: no software can keep what
its card throws away after saying it was kept), wear-levelling or its
metadata being lost, bit rot, corruption of data flushed long ago.

**Aimed cuts.**  A cut at a random moment seldom finds anything unflushed
(the guest flushes often).  ``arm()`` lets the card choose the moment from
what it holds: right after the guest's Nth write since its last flush
(``"burst"``: N = 1 is "between a write and its flush"), or when a FLUSH
arrives while it holds N writes or more (``"commit"``: before the guest's
commit is done).  The card then stops answering (the request that fired it
is never done) and sets ``fired``; the harness kills QEMU and calls
``power_cut()``, so the cut comes exactly there.

**The write stream.**  ``start_log()`` records every write and flush from
then on, with the file's contents before the log's first change to each
page (``undo``): from the disk file after the cut and that, the card at the
log's start can be rebuilt, and every crash state between two flushes
checked (tests/vm/crash_states.py).

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
import time
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
AIMS = ("burst", "commit")
SECTOR = 512


def tear(length: int, rng: random.Random) -> list[int] | None:
    """A request of ``length`` bytes torn at a cut: the indexes of a random
    non-empty, proper subset of its 512-byte sectors (the ones that reach
    the card); ``None`` for a single sector, which cannot tear."""
    count = (length + SECTOR - 1) // SECTOR
    if count < 2:
        return None
    while True:
        chosen = [i for i in range(count) if rng.random() < 0.5]
        if 0 < len(chosen) < count:
            return chosen


def torn_pieces(offset: int, data: bytes, sectors: list[int]) -> list[tuple[int, bytes]]:
    """The parts of a write that a tear lets through: (offset, bytes) for each sector kept."""
    return [(offset + i * SECTOR, data[i * SECTOR:(i + 1) * SECTOR]) for i in sectors]


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
    flush, in the order they came, and what a read sees (them over the file).

    ``lies``: a card that answers a flush without doing it (its writes stay
    held, and a cut loses them): not a model of the box's card, the limit of
    what any software on it can promise."""

    def __init__(self, path: Path, *, lies: bool = False):
        self.fd = os.open(path, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.lies = lies
        self.pending: list[tuple[int, bytes]] = []
        # What the guest reads back: the newest unflushed bytes, per 4 KiB page.
        self.pages: dict[int, bytearray] = {}
        self.lock = threading.Lock()
        self.epoch = 0          # grows at each cut: requests of an older client are refused
        self.stats = {"writes": 0, "flushes": 0, "cuts": 0, "lost_writes": 0, "kept_writes": 0,
                      "torn_writes": 0, "lost_bytes": 0}
        # The write stream, while logging (start_log): ("w", offset, data) and
        # ("f", monotonic time the flush was done, before its answer); and the
        # file's pages as they were before the log first changed them.
        self.log: list[tuple] | None = None
        self.undo: dict[int, bytes] = {}

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

    def write(self, offset: int, data: bytes, epoch: int | None = None) -> int:
        """Hold a write; how many writes the cache now holds."""
        with self.lock:
            self._alive(epoch)
            self.pending.append((offset, data))
            if self.log is not None:
                self.log.append(("w", offset, data))
            self.stats["writes"] += 1
            pos, end, at = offset, offset + len(data), 0
            while pos < end:
                index, skip = divmod(pos, self.PAGE)
                take = min(self.PAGE - skip, end - pos)
                self._page(index)[skip:skip + take] = data[at:at + take]
                pos, at = pos + take, at + take
            return len(self.pending)

    def _keep_undo(self, offset: int, length: int) -> None:
        """Before the file changes under a log: its pages as they were."""
        if self.log is None:
            return
        for index in range(offset // self.PAGE, (offset + length - 1) // self.PAGE + 1):
            if index not in self.undo:
                start = index * self.PAGE
                self.undo[index] = os.pread(self.fd, min(self.PAGE, self.size - start), start)

    def flush(self, epoch: int | None = None) -> None:
        """Make every held write durable in the file (then the guest is told)."""
        with self.lock:
            self._alive(epoch)
            self.stats["flushes"] += 1
            if self.lies:       # "done", says the card; nothing was written
                self.stats["lied_flushes"] = self.stats.get("lied_flushes", 0) + 1
                return
            for index, page in sorted(self.pages.items()):
                self._keep_undo(index * self.PAGE, len(page))
                os.pwrite(self.fd, page, index * self.PAGE)
            os.fsync(self.fd)
            self.pending.clear()
            self.pages.clear()
            if self.log is not None:
                self.log.append(("f", time.monotonic()))

    def start_log(self) -> None:
        """Record the write stream from now on.  The writes already held
        belong to its first interval (the file is the card's durable state)."""
        with self.lock:
            self.log = [("w", offset, data) for offset, data in self.pending]
            self.undo = {}

    def stop_log(self) -> tuple[list[tuple], dict[int, bytes]]:
        with self.lock:
            log, undo = self.log or [], self.undo
            self.log, self.undo = None, {}
            return log, undo

    def power_loss(self, rng: random.Random | None = None) -> dict:
        """The cut: the held writes are lost; with ``rng`` ("reorder"), each
        of them reaches the file whole (a third of the time), torn (a third:
        some of its sectors, :func:`tear`) or not at all, independently (so a
        later write may land while an earlier one is lost)."""
        with self.lock:
            landed: list[tuple[int, bytes]] = []        # what reaches the file, in order
            whole = torn = 0
            for offset, data in self.pending:
                if rng is None:
                    continue
                draw = rng.random()
                sectors = tear(len(data), rng) if 1 / 3 <= draw < 2 / 3 else None
                if sectors is not None:
                    torn += 1
                    landed += torn_pieces(offset, data, sectors)
                elif draw < 1 / 3 or (draw < 2 / 3 and rng.random() < 0.5):   # one sector: whole or nothing
                    whole += 1
                    landed.append((offset, data))
            for offset, data in landed:
                self._keep_undo(offset, len(data))
                os.pwrite(self.fd, data, offset)
            os.fsync(self.fd)
            held = sum(len(d) for _, d in self.pending)
            cut = {"unflushed_writes": len(self.pending), "kept_writes": whole, "torn_writes": torn,
                   "lost_writes": len(self.pending) - whole - torn,
                   "lost_bytes": held - sum(len(d) for _, d in landed)}
            self.epoch += 1
            self.stats["cuts"] += 1
            for key in ("lost_writes", "kept_writes", "torn_writes", "lost_bytes"):
                self.stats[key] += cut[key]
            self.pending.clear()
            self.pages.clear()
            return cut

    def close(self) -> None:
        os.close(self.fd)


class LossyDisk:
    """The server on a Unix socket, serving one file, one client at a time
    (QEMU's drive).  ``power_cut()`` after QEMU is killed; ``close()``
    after a clean power-off (QEMU's DISC: its flushes went through)."""

    def __init__(self, path: Path, sock_path: Path, *, mode: str = "drop", seed: int | None = None,
                 lies: bool = False):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {MODES}")
        self.path, self.sock_path, self.mode = Path(path), Path(sock_path), mode
        self.rng = random.Random(seed)
        self.cache = Cache(self.path, lies=lies)
        # The aimed cut (arm): what fires it, and the moment it fired.
        self._aim: tuple[str, int] | None = None
        self.fired = threading.Event()
        self.fired_at: dict | None = None
        self._power_gone = threading.Event()
        self._aim_lock = threading.Lock()
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
            elif kind in (CMD_WRITE, CMD_WRITE_ZEROES, CMD_TRIM):
                # A trimmed range may read back as anything: zeros, held like
                # any other write until a flush.
                held = cache.write(offset, data if kind == CMD_WRITE else bytes(length), epoch)
                self._aimed("burst", held)
            elif kind == CMD_FLUSH:
                self._aimed("commit", len(cache.pending))
                try:
                    cache.flush(epoch)
                except OSError:
                    error = EIO
            else:
                error = EINVAL
            conn.sendall(struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, error, handle) + payload)

    def _aimed(self, moment: str, held: int) -> None:
        """At a write just held ("burst") or a flush about to be done
        ("commit"): if the card is armed for this moment and holds enough,
        it fires: the request is never answered, nothing more is done, and
        the harness cuts (``power_cut`` wakes this thread, which then ends)."""
        with self._aim_lock:
            if self._aim is None or self._aim[0] != moment or held < self._aim[1] or held == 0:
                return
            self.fired_at = {"aim": moment, "held": held, "at": time.monotonic()}
            self._aim = None
            gone = self._power_gone
            self.fired.set()
        gone.wait()
        raise PowerGone()

    # -- the harness's side ----------------------------------------------------------------------
    def arm(self, aim: str, count: int = 1) -> None:
        """Let the card choose the cut: ``"burst"``, right after it holds
        ``count`` unflushed writes; ``"commit"``, at a FLUSH while it holds
        ``count`` or more.  ``fired`` is set then; the caller kills QEMU and
        calls :meth:`power_cut`."""
        if aim not in AIMS or count < 1:
            raise ValueError(f"aim {aim!r} (one of {AIMS}), count {count} (1 or more)")
        with self._aim_lock:
            self.fired.clear()
            self.fired_at = None
            self._power_gone = threading.Event()      # this aim's own: an older fired thread keeps its
            self._aim = (aim, count)

    def disarm(self) -> bool:
        """No aimed cut after all; whether it had already fired (then cut anyway)."""
        with self._aim_lock:
            self._aim = None
            return self.fired.is_set()

    def power_cut(self, reorder: bool | None = None, rng: random.Random | None = None) -> dict:
        """After QEMU was killed: the card loses its power.  ``reorder``
        overrides the server's mode for this cut, ``rng`` its random draws."""
        if reorder is None:
            reorder = self.mode == "reorder"
        with self._aim_lock:
            self._aim = None
        conn = self.conn
        if conn is not None:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            return self.cache.power_loss((rng or self.rng) if reorder else None)
        finally:
            self._power_gone.set()      # a fired request: its thread ends, undone

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
