"""Server-sent event streams: one hub per kind of news, one mailbox per phone.

A :class:`Hub` is told about every change once (by the table session or the
box) and posts the encoded event into the small :class:`Mailbox` of every
open stream.  Each stream's generator sleeps on its own mailbox
(``Condition.wait`` with the keep-alive interval as timeout): no polling, and
a change wakes it at once.

A phone that cannot keep up never makes the table wait: when its mailbox is
full the queued events are dropped and replaced by one *resync* marker, and
the stream then sends the current snapshot — older states are lost, the
latest never is (every ``state`` event is a complete state).

Each open stream holds one server worker thread (waitress), so the number of
streams is capped by :class:`StreamSlots`, in all and per client address;
when all are taken a lighter address's stream makes room (fair shares), and
a stream that finds no room is refused by the caller with a 503 at once.

Under waitress, a stream whose thread is idle (waiting in its mailbox) is
written to *directly* by the publisher (:class:`DirectWrite`): the event,
already encoded once, goes into the connection's output buffer and out on
its non-blocking socket, with no thread woken per phone.  On a Pi Zero that
is most of the cost of a change seen by 50 phones (each wake-up is a thread
switch and a fight for the GIL).  A stream busy sending (its first
snapshot, a resync) or a connection with a backlog takes the mailbox path
as before, so the order of events and the "latest state is never lost"
rule hold either way.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
from typing import Callable, Iterable

log = logging.getLogger("companion.web")

KEEPALIVE = b": keep-alive\n\n"
_RESYNC = object()      # mailbox overflowed: send the current snapshot instead
_CLOSE = object()       # the stream must end (client gone, server stopping)
BACKLOG = 64 * 1024     # bytes a connection may have unsent before events queue in its mailbox

Message = tuple[int, bytes]     # (version, encoded event); version 0 = always send


def sse_event(event: str, data, event_id: int | None = None) -> bytes:
    """One event in the text/event-stream format.  ``data`` is JSON-encoded on
    one line (json.dumps escapes newlines inside strings)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {text}\n\n".encode("utf-8")


class Ticket:
    """One stream's place in :class:`StreamSlots`: its address, when it
    opened, how to end it (``evict``, set by the hub) and how far behind its
    reader is (``unsent``: bytes its connection has not sent yet)."""

    __slots__ = ("address", "opened", "evict", "unsent", "held")

    def __init__(self, address: str):
        self.address = address
        self.opened = time.monotonic()
        self.evict: Callable[[], None] | None = None
        self.unsent: Callable[[], int] = lambda: 0
        self.held = True


class Marks:
    """Addresses marked for ``seconds`` (refused, or made to give way): they
    may not take a place by the spread-out rule meanwhile, so an attacker
    that reconnects at once keeps being refused while a phone that rarely
    is refused finds the places it leaves.  At most ``size`` addresses are
    remembered (the oldest marks are forgotten first)."""

    def __init__(self, seconds: float, size: int = 4096):
        self.seconds, self.size = seconds, size
        self._until: dict[str, float] = {}

    def mark(self, address: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._until.pop(address, None)          # to the end: the newest mark
        self._until[address] = now + self.seconds
        if len(self._until) > self.size:
            for old in list(self._until)[: len(self._until) - self.size]:
                del self._until[old]

    def marked(self, address: str, now: float | None = None) -> bool:
        until = self._until.get(address)
        if until is None:
            return False
        if until <= (time.monotonic() if now is None else now):
            del self._until[address]
            return False
        return True


class StreamSlots:
    """The open streams, with a ceiling in all and a smaller one per client
    address, shared by every hub of an app: one phone (or one hostile
    script) cannot take every stream, and with it every worker thread.

    **Fair shares, not first come** (issue 21): when every stream is taken,
    a newcomer from an address that holds fewer streams than the heaviest
    address (by two or more) is not refused; the heaviest address's slowest
    stream (most bytes unsent, then the oldest) is ended to make room.  When
    no address is that much heavier (the streams are spread over as many
    addresses as there are places), the oldest stream open for ``TURN_S``
    or more gives way to an address under its fair share that was not
    refused nor made to give way lately (:class:`Marks`).  Only a newcomer
    that finds neither is refused (503).

    Phones behind one NAT share an address, hence one ``per_address``
    budget; the serving layer sets it from ``max_streams_per_address``.
    """

    PER_ADDRESS = 8         # a phone with a few pages open; a small NAT'd table
    TURN_S = 10.0           # spread over many addresses, a stream this old may give way

    def __init__(self, limit: int, per_address: int | None = None):
        self.limit = limit
        self.per_address = per_address or self.PER_ADDRESS
        self.open = 0
        self.evicted = 0            # streams ended to make room for a lighter address
        self._by_address: dict[str, list[Ticket]] = {}
        self._marks = Marks(self.TURN_S)
        self._lock = threading.Lock()

    def take(self, address: str = "") -> Ticket | None:
        """A place for a stream from ``address``, or None (over its address's
        cap, or every place taken by addresses no heavier than this one)."""
        victim = None
        with self._lock:
            held = len(self._by_address.get(address, ()))
            if address and held >= self.per_address:
                return None
            if self.open >= self.limit:
                victim = self._victim(address, held)
                if victim is None:
                    if address:
                        self._marks.mark(address)
                    return None
                self._release(victim)           # its place is the newcomer's now
                self._marks.mark(victim.address)
                self.evicted += 1
            ticket = Ticket(address)
            self._by_address.setdefault(address, []).append(ticket)
            self.open += 1
        if victim is not None and victim.evict is not None:
            try:
                victim.evict()
            except Exception:
                log.exception("ending a stream to make room failed")
        return ticket

    def _victim(self, address: str, held: int) -> Ticket | None:
        """The stream to end for a newcomer from ``address``, which holds
        ``held``: the slowest of the heaviest address if that holds two more;
        else, if the newcomer's address holds less than a fair share (the
        streams are spread over many addresses) and was neither refused nor
        made to give way in the last ``TURN_S``, the oldest stream
        open for at least ``TURN_S`` of an address holding more, so that
        places turn over slowly rather than never."""
        heaviest = max(self._by_address.values(), key=len, default=[])
        if len(heaviest) >= held + 2:
            return min(heaviest, key=lambda t: (-_unsent(t), t.opened))
        if held * (len(self._by_address) + 1) >= self.limit:
            return None             # the newcomer's address has its fair share already
        if self._marks.marked(address):
            return None             # refused or made to give way lately: not by this rule
        oldest = None
        before = time.monotonic() - self.TURN_S
        for other, tickets in self._by_address.items():
            if other == address or len(tickets) <= held:
                continue
            first = tickets[0]                  # each list is in the order of opening
            if first.opened <= before and (oldest is None or first.opened < oldest.opened):
                oldest = first
        return oldest

    def _release(self, ticket: Ticket) -> None:
        if not ticket.held:
            return
        ticket.held = False
        self.open -= 1
        tickets = self._by_address.get(ticket.address, [])
        if ticket in tickets:
            tickets.remove(ticket)
        if not tickets:
            self._by_address.pop(ticket.address, None)

    def give_back(self, ticket: Ticket) -> None:
        with self._lock:
            self._release(ticket)


def _unsent(ticket: Ticket) -> int:
    try:
        return int(ticket.unsent())
    except Exception:
        return 0


class Mailbox:
    """The bounded queue of one stream (a deque under a Condition).

    ``last`` is the newest version the stream has sent (or had written for
    it); ``direct`` the stream's :class:`DirectWrite`, used while its
    thread waits here with nothing queued."""

    def __init__(self, size: int, direct: "DirectWrite | None" = None):
        self.size = size
        self.direct = direct
        self.last = -1
        self._items: collections.deque = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._closed = False
        self._idle = False          # the stream's thread waits in take(): it writes nothing now

    def post(self, item) -> None:
        with self._cond:
            if self._closed:
                return
            if item is _CLOSE:
                self._closed = True
                self._items.clear()
            elif self._idle and not self._items and self.direct is not None and isinstance(item, tuple):
                version, data = item
                if version and version <= self.last:
                    return                      # already sent
                if self.direct.write(data):     # no thread to wake
                    self.last = max(self.last, version)
                    return
            elif len(self._items) >= self.size:
                # The phone is behind: forget the backlog, send it the present.
                self._items.clear()
                item = _RESYNC
            self._items.append(item)
            self._cond.notify()

    def close(self) -> None:
        self.post(_CLOSE)

    def take(self, timeout: float):
        """The next item, or None after ``timeout`` seconds of silence."""
        with self._cond:
            if not self._items:
                self._idle = True
                try:
                    self._cond.wait(timeout)
                finally:
                    self._idle = False
            return self._items.popleft() if self._items else None

    def sent(self, version: int) -> bool:
        """Record that the stream sends ``version``; False if it already did."""
        with self._cond:
            if version and version <= self.last:
                return False
            self.last = max(self.last, version)
            return True


class DirectWrite:
    """Writes an event straight into a waitress connection, framed as the
    server frames the stream's own chunks (HTTP/1.1 without a length:
    chunked; HTTP/1.0: raw, the connection closes at the end).

    Only used through :meth:`Mailbox.post`, under the mailbox's lock and
    while the stream's thread waits, so the two never write at once.  A
    connection with more than :data:`BACKLOG` bytes unsent is not written
    to (the event queues in the mailbox, which resyncs a phone that stays
    behind); nor is one that is gone (its thread then finds out)."""

    def __init__(self, channel, chunked: bool):
        self.channel = channel
        self.chunked = chunked
        self.writes = 0             # events written this way (the rest went through the mailbox)

    @classmethod
    def of(cls, environ: dict) -> "DirectWrite | None":
        """For a stream served by our waitress channel (see :func:`watch_disconnect`), else None."""
        check = environ.get("waitress.client_disconnected")
        channel = getattr(check, "__self__", None)
        if channel is None or not hasattr(channel, "disconnect_callbacks") or not hasattr(channel, "write_soon"):
            return None
        return cls(channel, environ.get("SERVER_PROTOCOL") == "HTTP/1.1")

    def write(self, data: bytes) -> bool:
        channel = self.channel
        if not channel.connected or channel.total_outbufs_len > BACKLOG:
            return False
        if self.chunked:
            data = b"%X\r\n%s\r\n" % (len(data), data)
        try:
            channel.write_soon(data)        # appends, and sends what the socket takes now
        except Exception:                   # ClientDisconnected, a closed socket
            return False
        self.writes += 1
        return True


class Hub:
    """Fans one stream of news out to every open event stream.

    ``snapshot()`` returns the messages that bring a new (or resyncing)
    stream up to date; it is called under ``lock`` together with the
    stream's registration, so no change can fall between the two.
    """

    def __init__(self, slots: StreamSlots, snapshot: Callable[[], list[Message]], *,
                 lock=None, keepalive: float = 15.0, retry_ms: int = 2000, mailbox_size: int = 16):
        self.slots = slots
        self.snapshot = snapshot
        self.lock = lock or threading.RLock()
        self.keepalive = keepalive
        self.retry_ms = retry_ms
        self.mailbox_size = mailbox_size
        self._boxes: set[Mailbox] = set()
        self._boxes_lock = threading.Lock()
        self.closed = False

    # -- the news side ---------------------------------------------------
    def publish(self, messages: Iterable[Message]) -> None:
        """Post to every stream; quick, never blocks on a phone."""
        with self._boxes_lock:
            boxes = list(self._boxes)
        for message in messages:
            for box in boxes:
                box.post(message)

    def close(self) -> None:
        """End every stream now and refuse new ones (server shutting down)."""
        with self._boxes_lock:
            self.closed = True
            boxes = list(self._boxes)
        for box in boxes:
            box.close()

    @property
    def streams(self) -> int:
        with self._boxes_lock:
            return len(self._boxes)

    # -- the phone side --------------------------------------------------
    def open(self, environ: dict | None = None) -> "EventStream | None":
        """A new stream, or None when the cap is reached or the hub is closed.
        The caller must hand the stream to the server as the response body
        (its ``close()`` gives the slot back)."""
        environ = environ or {}
        address = environ.get("REMOTE_ADDR") or ""
        if self.closed:
            return None
        ticket = self.slots.take(address)
        if ticket is None:
            return None
        direct = DirectWrite.of(environ)
        box = Mailbox(self.mailbox_size, direct)
        channel = direct.channel if direct is not None else None
        ticket.evict = lambda: _evict(box, channel)
        if channel is not None:
            ticket.unsent = lambda: channel.total_outbufs_len
            channel.streaming = True        # its connection's rank when its address must give one up
        if not ticket.held:                 # made room for another before it could be told how to end
            return None
        with self.lock:
            with self._boxes_lock:
                if self.closed:
                    self.slots.give_back(ticket)
                    return None
                self._boxes.add(box)
            first = self.snapshot()
        return EventStream(self, box, first, environ, ticket)

    def _forget(self, box: Mailbox) -> None:
        with self._boxes_lock:
            self._boxes.discard(box)

    def resync(self) -> list[Message]:
        with self.lock:
            return self.snapshot()


class EventStream:
    """The WSGI response body of one event stream: an iterator of chunks with
    a ``close()`` that the server always calls, even if it never iterated."""

    def __init__(self, hub: Hub, box: Mailbox, first: list[Message], environ: dict, ticket: Ticket):
        self.hub, self.box, self.ticket = hub, box, ticket
        self.address = environ.get("REMOTE_ADDR") or ""
        self._released = False
        self._unwatch = watch_disconnect(environ, box.close)
        self._chunks = self._run(first)

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def _run(self, first: list[Message]):
        pending = collections.deque(first)
        yield f"retry: {self.hub.retry_ms}\n\n".encode()
        while True:
            while pending:
                version, data = pending.popleft()
                if not self.box.sent(version):
                    continue            # already sent (raced with the snapshot, or written directly)
                yield data
            item = self.box.take(self.hub.keepalive)
            if item is _CLOSE:
                return
            if item is None:
                yield KEEPALIVE         # also how a dead client is noticed without a hook
            elif item is _RESYNC:
                pending.extend((0, data) for _, data in self.hub.resync())
            else:
                pending.append(item)

    def close(self) -> None:
        if self._released:
            return
        self._released = True
        self._chunks.close()
        self._unwatch()
        self.hub._forget(self.box)
        self.hub.slots.give_back(self.ticket)


def _evict(box: Mailbox, channel) -> None:
    """End a stream to make room for a lighter address: its thread leaves
    its mailbox at once, and its connection (under waitress) is closed by
    the serving loop, which also frees a thread stuck writing to a client
    that does not read (see :meth:`web.serve.CompanionChannel.evict`)."""
    box.close()
    evict = getattr(channel, "evict", None)
    if evict is not None:
        evict("stream ended for a lighter address")


def watch_disconnect(environ: dict, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` as soon as the server sees the client hang up.

    Under waitress, ``environ["waitress.client_disconnected"]`` is a bound
    method of the connection's channel; our channel class
    (:class:`web.serve.CompanionChannel`) runs its ``disconnect_callbacks``
    from the network thread when the client closes.  Elsewhere (Flask's dev
    server, the test client) the next keep-alive write finds a dead client.
    Returns the function that stops watching.
    """
    check = environ.get("waitress.client_disconnected")
    channel = getattr(check, "__self__", None)
    callbacks = getattr(channel, "disconnect_callbacks", None)
    if callbacks is None:
        return lambda: None
    callbacks.append(callback)
    if check():                 # hung up before we started watching
        callback()

    def unwatch():
        try:
            callbacks.remove(callback)
        except ValueError:
            pass
    return unwatch
