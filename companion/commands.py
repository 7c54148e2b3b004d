"""The table's data commands: ``replay``, ``export``, ``import`` and ``games``.

    companion replay FILE          fold a game log (FILE or -) and print its public state
    companion export GAME          print a stored game as a replayable JSON Lines log
    companion export --format bgstats|csv [--from D] [--to D] [GAME]
                                   finished games as BG Stats plays or CSV rows
    companion import FILE          check a log like ``replay`` and store it as a new game
    companion games                list stored games, newest first

Each takes the parsed arguments (:mod:`appliance.cli` parses them) and
returns the exit status.  ``replay`` is a public contract (docs/replay.md):
exit 0 and one JSON object on stdout, or exit 2 and ``line N: ...`` on
stderr.  No command ever shows a traceback; names are printed through
:func:`companion.text.visible`, so no stored text reaches a terminal as a
control sequence.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import config as cfg
from .errors import ActionError
from .i18n import _, translate_error
from .limits import MAX_IMPORT_BYTES, MAX_IMPORT_LINES, MAX_STORED_INT
from .text import visible
from .timeline import ReplayError, replay


def replay_command(args) -> int:
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            data = Path(args.file).read_bytes()
    except OSError as exc:
        print(_("companion: cannot read {file}: {reason}", file=args.file, reason=exc.strerror or exc), file=sys.stderr)
        return 2
    try:
        timeline = replay(_decoded_lines(data))
    except ReplayError as exc:
        print(f"line {exc.line}: {translate_error(exc.error)}", file=sys.stderr)
        return 2
    print(json.dumps(timeline.public()))
    return 0


def _decoded_lines(data: bytes):
    """Lines of the file as text; a line that is not UTF-8 becomes a JSON error at its number."""
    for raw in data.split(b"\n"):
        try:
            yield raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8")
        except UnicodeDecodeError:
            yield "\x00 not UTF-8"


def _store(args):
    from .limits import StoreLimits
    from .store import Store

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    try:
        limits = StoreLimits.from_config(cfg.load(data_dir, getattr(args, "config", None)))
    except ValueError as exc:           # a setting out of range: one clear line
        raise SystemExit(f"companion: {exc}") from None
    return Store(data_dir, limits=limits)


def export_command(args) -> int:
    if args.format != "log":
        return _export_plays(args)
    if args.game is None:
        print(_("companion: export needs a game number (see 'companion games'), or --format bgstats|csv"),
              file=sys.stderr)
        return 2
    store = _store(args)
    if args.game == "current":
        record = store.latest_unfinished() or (store.games() or [None])[0]
    else:
        try:
            number = int(args.game)
        except ValueError:
            number = None
        # A number beyond what SQLite holds names no stored game either.
        record = store.game(number) if number is not None and abs(number) <= MAX_STORED_INT else None
    if record is None:
        print(_("companion: no stored game '{game}' (see 'companion games')", game=args.game), file=sys.stderr)
        return 1
    for line in store.lines(record.id):
        # A name with a terminal escape stays a name: shown as \u001b, which
        # is the same character to a JSON reader (tabs between tokens stay).
        sys.stdout.write(visible(line, keep="\t") + "\n")
    return 0


def _export_plays(args) -> int:
    """Finished games as BG Stats plays (JSON Lines) or CSV rows (companion/plays.py);
    GAME: that one game only."""
    from datetime import date

    from . import plays

    days = []
    for flag, text in (("--from", args.since), ("--to", args.until)):
        try:
            days.append(date.fromisoformat(text) if text else None)
            if text and len(text) != 10:
                raise ValueError(text)
        except ValueError:
            print(_("companion: {flag} must be a date written YYYY-MM-DD, got '{value}'", flag=flag,
                    value=visible(text[:24])), file=sys.stderr)
            return 2
    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    table = str(cfg.load(data_dir, getattr(args, "config", None)).get("name") or "")
    store = _store(args)
    ids = None
    if args.game is not None:
        number = int(args.game) if args.game.isascii() and args.game.isdigit() and len(args.game) < 19 else None
        record = store.game(number) if number is not None else None
        if record is None or not record.finished:
            message = (_("companion: game {game} is not finished: it is no play yet", game=args.game) if record
                       else _("companion: no stored game '{game}' (see 'companion games')", game=visible(args.game)))
            print(message, file=sys.stderr)
            return 1
        ids = {number}
    found = [f for f in plays.store_facts(store, table, ids) if plays.within(f, *days)]
    if args.format == "bgstats":
        # A name with a terminal escape stays a name (shown as \u001b, the same to a JSON reader).
        sys.stdout.write("".join(visible(plays.encoded(plays.play(f))) + "\n" for f in found))
    else:
        sys.stdout.buffer.write(plays.csv_text([(f.id, plays.play(f)) for f in found]).encode("utf-8"))
    sys.stdout.flush()
    return 0


def import_command(args) -> int:
    """Store a log file as a new game, finished or not (resume it from the box
    or the phone to go on).  Checked first exactly like ``replay``: exit 2 and
    ``line N: ...`` on the first bad line, and nothing is stored."""
    from .exports import decoded_lines, store_timeline

    try:
        data = _read_limited(args.file)
    except OSError as exc:
        print(_("companion: cannot read {file}: {reason}", file=args.file, reason=exc.strerror or exc), file=sys.stderr)
        return 2
    if len(data) > MAX_IMPORT_BYTES:
        print(_("companion: {file} is larger than the largest log the box imports ({limit} bytes)",
                file=args.file, limit=MAX_IMPORT_BYTES), file=sys.stderr)
        return 2
    lines = decoded_lines(data)
    actions = sum(1 for line in lines if line.strip())
    if actions > MAX_IMPORT_LINES:
        print(_("companion: the log has {n} lines: the box stores games of at most {limit} lines",
                n=actions, limit=MAX_IMPORT_LINES), file=sys.stderr)
        return 2
    try:
        timeline = replay(lines)      # before the store is even opened: a bad log touches nothing
    except ReplayError as exc:
        print(visible(f"line {exc.line}: {translate_error(exc.error)}"), file=sys.stderr)
        return 2
    store = _store(args)
    try:
        game_id = store_timeline(store, timeline)
    except ActionError as exc:          # the store is full and may not prune (companion/limits.py)
        print(visible(f"companion: {translate_error(exc)}"), file=sys.stderr)
        return 1
    finally:
        store.close()
    print(_("Stored as game {id}.", id=game_id))
    return 0


def _read_limited(file: str) -> bytes:
    """At most one byte more than the import limit: ``/dev/zero`` or a
    runaway pipe ends at once instead of filling the memory."""
    if file == "-":
        return sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
    with open(file, "rb") as fh:
        return fh.read(MAX_IMPORT_BYTES + 1)


def games_command(args) -> int:
    import time

    store = _store(args)
    records = store.games()
    if not records:
        print(_("No stored games yet."))
        return 0
    for r in records:
        status = _("finished") if r.finished else _("unfinished")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.updated))
        # Names as stored, but never a raw control character into the terminal.
        print(visible(f"{r.id:>5}  {when}  {r.game:<15} {status:<11} {r.actions:>5} {_('actions')}  "
                      f"{', '.join(r.players)}"))
    return 0
