"""A stored game going out (JSON Lines, CSV) and a log file coming in.

* :func:`public_log` — the one gate every way out goes through (exports,
  history, CSV, backups, the command line, the hub feeder): the log without
  each secret entry that ``undo`` took back before it was ever revealed, and
  without that ``undo``.  Undo pops a stack, so the public log replays to the
  very same state.  :func:`public_prefix` is the part of it that may leave the
  box now: up to the first secret entry still unrevealed.
* :func:`export_lines` — the replay-format log of a game, either whole (for
  the table PIN holder, or a command line on the box) or with every secret
  entry the table has not seen revealed replaced by ``null``
  (:func:`companion.history.public_lines`).  A redacted log is for reading:
  it does not replay until its ``null`` values are filled in.
* :func:`scored_rows` / :func:`csv_text` — one CSV row per *scored step*:
  the first step (``new_game``, everyone at their starting score) and every
  later step after which the public ``scores`` differ from the step before
  (an ``undo`` that takes points back is a scored step too).  The columns
  are the log's line number, the action type, then one score per seat.
  Only public states are read, so a CSV never holds a hidden value.
* :func:`import_log` — validates a log action by action exactly as
  ``companion replay`` does (the first bad line raises
  :class:`~companion.timeline.ReplayError` with its number) and only then
  stores it as a new game, in one transaction: a refused log stores nothing.
  (:meth:`companion.session.TableSession.import_log` does the same for the
  session; the web uses :func:`store_timeline` so that the slow validation
  runs outside the session lock and a finished game gets its backup.)
"""

from __future__ import annotations

import csv
import io

from .errors import ActionError
from .history import public_lines, public_steps
from .i18n import N_, gettext
from .store import dump_action
from .timeline import ReplayError, Timeline, parse_line, replay

# A log is at most this many bytes when imported (a long Costly Tricks match
# entered card by card is about 60 KiB; waitress refuses bodies over 1 MiB).
MAX_IMPORT_BYTES = 1024 * 1024

# Cells a spreadsheet would run as a formula: a player named "=1+1" must stay a name.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# -- the public log -------------------------------------------------------------

def _fold(lines: list[str]) -> tuple[Timeline, int | None]:
    """``(timeline, index)``: ``lines`` folded up to the first one that does
    not replay, whose index in ``lines`` is ``index`` (None if all do)."""
    timeline = Timeline()
    for index, text in enumerate(lines):
        if not text.strip():
            continue
        try:
            timeline.apply(parse_line(text))
        except ActionError:
            return timeline, index
    return timeline, None


def public_log(lines) -> list[str]:
    """The public log of a stored log (lines of text, blank lines dropped).

    A secret entry taken back with ``undo`` before it was ever revealed is
    left out together with that ``undo``; an entry revealed once stays, even
    if the reveal was undone later.  The result replays to the same state.
    A log that stops replaying at some line (a store edited by hand) keeps
    that line and the rest as stored: they cannot be folded to be judged."""
    lines = [line for line in lines if line.strip()]
    if not any(_is_undo(line) for line in lines):
        return lines            # no undo, no pair to drop: no need to fold the game
    timeline, broken = _fold(lines)
    good = lines if broken is None else lines[:broken]
    public = good if len(timeline.log) == len(good) else [dump_action(a) for a in timeline.log]
    return public + ([] if broken is None else lines[broken:])


def _is_undo(line: str) -> bool:
    try:
        action = parse_line(line)
    except ActionError:
        return True             # not readable: let the fold judge it
    return action.get("type") == "undo"


def public_prefix(lines) -> list[str]:
    """The longest prefix of the public log holding no secret entry still
    unrevealed: what may leave the box now (the hub feeder sends this).

    It only grows as lines are added: an entry before its end was revealed
    or is public, and nothing before it is ever taken out of the log.
    A line that does not replay ends it."""
    timeline, _broken = _fold([line for line in lines if line.strip()])
    end = min(timeline.unrevealed(), default=len(timeline.log))
    return [dump_action(a) for a in timeline.log[:end]]


# -- reading a stored log -----------------------------------------------------

def decoded_lines(data: bytes) -> list[str]:
    """The lines of an uploaded file as text, as ``companion replay`` reads them:
    a line that is not UTF-8 becomes a JSON error at its own line number."""
    out = []
    for raw in data.split(b"\n"):
        try:
            out.append(raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8"))
        except UnicodeDecodeError:
            out.append("\x00 not UTF-8")
    return out


def steps_of(lines: list[str]) -> tuple[list[dict], int | None]:
    """``(public steps, broken_at)``: the step-through of a stored log.

    A stored log always replays (the session stored only accepted actions);
    should one not (a store edited by hand), the steps stop before the first
    bad line and ``broken_at`` is its number, so the rest stays readable."""
    try:
        return public_steps(lines), None
    except ActionError:
        pass
    try:
        replay(lines)
    except ReplayError as exc:
        return public_steps(lines[:exc.line - 1]), exc.line
    return public_steps(lines), None         # pragma: no cover  (replay and public_steps agree)


def export_lines(lines: list[str], *, full: bool) -> list[str]:
    """The log to download: the public log (:func:`public_log`) when
    ``full``, else each of its actions with unrevealed secrets as ``null``."""
    if full:
        return public_log(lines)
    return [dump_action(action) for action in public_lines(lines)]


# -- CSV ------------------------------------------------------------------------

def scored_rows(steps: list[dict]) -> list[list]:
    """``[[line number, action type, score of seat 0, ...], ...]`` for the
    first step and every step after which ``scores`` changed."""
    rows: list[list] = []
    previous = None
    for index, step in enumerate(steps):
        scores = list(step["state"].get("scores") or [])
        if index == 0 or scores != previous:
            rows.append([step["n"], step["action"].get("type"), *scores])
        previous = scores
    return rows


def csv_text(steps: list[dict], language: str | None = None) -> str:
    """The CSV of a game's scored steps, with a header row naming the seats."""
    players = list(steps[0]["state"].get("players") or []) if steps else []
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\r\n")
    out.writerow([_cell(gettext(N_("step"), language)), _cell(gettext(N_("action"), language)),
                  *(_cell(name) for name in players)])
    for row in scored_rows(steps):
        out.writerow([_cell(value) for value in row])
    return buf.getvalue()


def _cell(value):
    """A text cell that cannot start a spreadsheet formula (numbers are left alone)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


# -- import -------------------------------------------------------------------

def validate(lines) -> Timeline:
    """Fold ``lines`` like ``companion replay``: the timeline, whose ``log``
    holds every action in order (blank lines skipped).  Raises ``ReplayError``."""
    return replay(lines)


def import_log(store, lines) -> int:
    """Validate ``lines`` (a log as text lines) and store it as a new game;
    return its id.  Raises ``ReplayError`` (nothing stored) or ``StoreError``."""
    return store_timeline(store, validate(lines))


def store_timeline(store, timeline: Timeline, keep=()) -> int:
    """Store a validated log (``timeline.log``) as a new game, finished or
    not, in one transaction (:meth:`Store.import_game`); a finished one also
    gets its backup file, as a game finished at the table does.
    The caller serialises store access (the web holds the session lock)."""
    public = timeline.public()
    finished = bool(public.get("finished"))
    winner = public.get("winner") if finished else None
    # ``timeline.log`` is already the public log: a pair taken back is not stored.
    game_id = store.import_game(timeline.game.id, list(timeline.players),
                                [dump_action(action) for action in timeline.log], finished, winner,
                                public=public, keep=keep)
    if finished:
        store.backup(game_id)
    return game_id
