"""A log that no client writes (issue 21, finding 3).

Request lines, paths, headers and names reach the log only through this
filter: every character that a terminal or journald would act on (C0 and
C1 controls, DEL, line and paragraph separators, the characters that
reorder text, any other non-printable one) is shown escaped (``\\x1b``,
``\\n``, ``\\u202e``; a backslash as ``\\\\``), a record is one line (a
traceback is folded onto it, `` | `` between its lines), and a line holds at
most :data:`LINE_MAX` characters.  So ``ESC ] 0;… BEL ESC[2J`` in a path, or a newline followed by
a forged "WARNING … the table PIN is 0000", reads as the text it is.

Records about one client (they carry ``client``: the channel's logger adds
it, see :func:`client_logger`) are also rate-limited per address: at most
:data:`PER_ADDRESS` lines a minute from one address and :data:`PER_MINUTE`
from all clients together; the rest are counted and summarised in one line
a minute (:meth:`ClientBudget.flush`).  A loop of hostile requests therefore
writes a bounded number of bytes, whatever it sends.
"""

from __future__ import annotations

import logging
import threading
import time

LINE_MAX = 1000             # characters of one logged line (a folded traceback included)
PER_ADDRESS = 5             # lines a minute about one client address
PER_MINUTE = 60             # lines a minute about all clients together
WINDOW_S = 60.0

_KEEP = frozenset(" ")


def escape(text: str) -> str:
    """``text`` with every non-printable character escaped, on one line; a
    backslash is doubled, so that a client's literal ``\\x1b`` cannot pass
    for an escaped ESC."""
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch.isprintable() or ch in _KEEP:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def clean(text: str, limit: int = LINE_MAX) -> str:
    """One escaped line of at most ``limit`` characters (the cut is said)."""
    line = escape(text)
    if len(line) > limit:
        cut = len(line) - limit
        line = f"{line[:limit]}… ({cut} more characters)"
    return line


class ClientBudget:
    """How many lines about each client address may be logged this minute
    (``per_address``), and about all of them together (``per_minute``); the
    rest are counted, and :meth:`flush` logs their summary once the minute is
    over.  Each server has its own (:class:`web.serve.Server`); records that
    name none use :data:`BUDGET`."""

    def __init__(self, per_address: int = PER_ADDRESS, per_minute: int = PER_MINUTE, window_s: float = WINDOW_S):
        self.per_address, self.per_minute, self.window_s = per_address, per_minute, window_s
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Start a new window, forgetting the current one."""
        with self._lock:
            self._since = time.monotonic()
            self._lines: dict[str, int] = {}        # client address -> lines logged this window
            self._all = 0
            self._dropped: dict[str, int] = {}      # client address -> lines suppressed this window

    def allow(self, address: str) -> bool:
        with self._lock:
            summary = self._roll(time.monotonic())
            lines = self._lines.get(address, 0)
            if lines >= self.per_address or self._all >= self.per_minute:
                self._dropped[address] = self._dropped.get(address, 0) + 1
                allowed = False
            else:
                self._lines[address] = lines + 1
                self._all += 1
                allowed = True
        if summary:
            _say(summary)
        return allowed

    def _roll(self, now: float) -> str | None:
        """Start a new window if the last one is over; its summary, if any."""
        if now - self._since < self.window_s:
            return None
        summary = None
        if self._dropped:
            worst, most = max(self._dropped.items(), key=lambda item: item[1])
            summary = (f"suppressed {sum(self._dropped.values())} log lines about {len(self._dropped)} "
                       f"client address(es) in the last {self.window_s:g} s (most: {most} about {worst})")
        self._since, self._lines, self._all, self._dropped = now, {}, 0, {}
        return summary

    def flush(self, now: float | None = None) -> None:
        """Log the summary of the window just ended, if it is over (the
        serving loop calls this once a second)."""
        with self._lock:
            summary = self._roll(time.monotonic() if now is None else now)
        if summary:
            _say(summary)


def _say(summary: str) -> None:
    logging.getLogger("companion.web").warning("%s", summary)


class SafeRecords(logging.Filter):
    """Escapes and bounds every record it sees, and drops the records about
    one client past their :class:`ClientBudget` (the record's
    ``companion_budget``, else :data:`BUDGET`).  One instance per process
    (:data:`SAFE`), on the loggers that carry client text and on the root's
    handlers."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "companion_clean", False):
            self._clean(record)
        client = getattr(record, "client", None)
        if client is None and record.name == QUEUE_LOGGER:
            # "Task queue depth is N" comes once per queued request: clients
            # that flood the server would flood the log through it.
            client = record.client = "(task queue)"
        if client is None:
            return True
        allowed = getattr(record, "companion_allowed", None)
        if allowed is None:
            budget = getattr(record, "companion_budget", None) or BUDGET
            allowed = record.companion_allowed = budget.allow(escape(str(client))[:64])
        return allowed

    @staticmethod
    def _clean(record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:                       # a bad format string: log what there is
            message = f"{record.msg!r} {record.args!r}"
        if record.exc_info:
            message += " | " + logging.Formatter().formatException(record.exc_info).replace("\n", " | ")
            record.exc_info, record.exc_text = None, None
        if record.stack_info:
            message += " | " + record.stack_info.replace("\n", " | ")
            record.stack_info = None
        record.msg, record.args = clean(message), ()
        record.companion_clean = True


BUDGET = ClientBudget()
SAFE = SafeRecords()
QUEUE_LOGGER = "waitress.queue"
CLIENT_LOGGERS = ("waitress", QUEUE_LOGGER, "companion.web")


def install(handlers: bool = False) -> None:
    """Put :data:`SAFE` on the loggers that carry client text (and, with
    ``handlers``, on every handler of the root logger: any other logger's
    records are escaped too).  Idempotent."""
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        if SAFE not in logger.filters:
            logger.addFilter(SAFE)
    if handlers:
        for handler in logging.getLogger().handlers:
            if SAFE not in handler.filters:
                handler.addFilter(SAFE)


def client_logger(logger: logging.Logger, addr, budget: ClientBudget | None = None) -> logging.LoggerAdapter:
    """``logger`` with each record tagged with the client's address (and the
    budget it counts against: default :data:`BUDGET`)."""
    address = addr[0] if isinstance(addr, tuple) and addr else str(addr or "")
    return logging.LoggerAdapter(logger, {"client": address, "companion_budget": budget})
