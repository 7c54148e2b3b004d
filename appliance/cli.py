"""The ``companion`` command.

    companion replay FILE          fold a game log (FILE or -) and print its public state
    companion export GAME          print a stored game as a replayable JSON Lines log
    companion export --format bgstats|csv [--from D] [--to D] [GAME]
                                   finished games as BG Stats plays or CSV rows
    companion games                list stored games, newest first
    companion backup [--data DIR] FILE    one file: games, roster, settings, Wi-Fi password
    companion restore FILE [--data DIR]   put such a file back (appliance/backup.py)
    companion run [--mock] ...     run the appliance (buttons, screen, web)
    companion solve fight ...      solve FIGHT? for two players
    companion hub serve|add-box|…  the club hub (see hub/cli.py)
    companion bundle|update|self-check   signed update bundles, updates with rollback (update_cli.py)

``replay`` is a public contract (``docs/replay.md``): exit 0 and one
JSON object on stdout, or exit 2 and ``line N: ...`` on stderr.  No command
ever shows a traceback to the user.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from companion import config as cfg
from companion.errors import ActionError, CompanionError
from companion.i18n import _, set_language, translate_error
from companion.limits import MAX_IMPORT_BYTES, MAX_IMPORT_LINES, MAX_STORED_INT
from companion.text import visible
from companion.timeline import ReplayError, replay


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump noise
        self.exit(2, f"companion: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="companion", description=_("The game-table companion."))
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("replay", help=_("replay a game log and print its public state"))
    r.add_argument("file", help=_("a JSON Lines game log, or - for standard input"))

    e = sub.add_parser("export", help=_("print a stored game as a JSON Lines log"))
    e.add_argument("game", nargs="?", help=_("the game number (see 'companion games'), or 'current'"))
    e.add_argument("--data", help=_("the data folder"))
    e.add_argument("--format", choices=["log", "bgstats", "csv"], default="log",
                   help=_("log: the game's replayable log (the default); bgstats: every finished game as "
                          "BG Stats plays, one per line; csv: one row per player per finished game"))
    e.add_argument("--from", dest="since", metavar="YYYY-MM-DD",
                   help=_("bgstats and csv: only games played on or after this day"))
    e.add_argument("--to", dest="until", metavar="YYYY-MM-DD",
                   help=_("bgstats and csv: only games played on or before this day"))

    i = sub.add_parser("import", help=_("check a JSON Lines game log like 'replay' and store it as a new game"))
    i.add_argument("file", help=_("a JSON Lines game log, or - for standard input"))
    i.add_argument("--data", help=_("the data folder"))

    g = sub.add_parser("games", help=_("list stored games, newest first"))
    g.add_argument("--data", help=_("the data folder"))

    b = sub.add_parser("backup", help=_("write one backup file: games, roster, settings, Wi-Fi password"))
    b.add_argument("--data", help=_("the data folder"))
    b.add_argument("file", help=_("the backup file to write"))

    rs = sub.add_parser("restore", help=_("restore a backup file (stop the companion service first)"))
    rs.add_argument("file", help=_("a backup file made by 'companion backup' or the backup page"))
    rs.add_argument("--data", help=_("the data folder"))

    run = sub.add_parser("run", help=_("run the appliance"))
    run.add_argument("--mock", action="store_true", help=_("mock pins and screen: run on any computer"))
    run.add_argument("--host", help=_("the address to serve on (with --mock: 127.0.0.1 unless given)"))
    run.add_argument("--port", type=int, help=_("the port to serve on"))
    run.add_argument("--data", help=_("the data folder"))
    run.add_argument("--config", help=_("a settings file (TOML)"))
    run.add_argument("--dev-server", action="store_true", help=_("use Flask's development server"))
    run.add_argument("--dev-anywhere", action="store_true",
                     help=_("with --mock: let other computers open the mock box's /dev page and buttons"))

    w = sub.add_parser("wifi", help=_("raise the box's own Wi-Fi when it needs one (as root; the 'wifi' setting)"))
    w.add_argument("--data", help=_("the data folder"))
    w.add_argument("--config", help=_("a settings file (TOML)"))

    a = sub.add_parser("setup-apply", help=_("apply what the Setup page asked for: time zone, name, SSH (as root)"))
    a.add_argument("--data", help=_("the data folder"))

    s = sub.add_parser("solve", help=_("solve a game position"))
    s.add_argument("game", choices=["fight"])
    s.add_argument("rest", nargs=argparse.REMAINDER)

    from .update_cli import add_parsers as add_update_parsers

    add_update_parsers(sub)       # bundle, update, self-check

    try:   # the club hub's commands (hub/cli.py imports no psycopg until run)
        from hub.cli import add_parser as add_hub_parser
    except ImportError:
        pass
    else:
        add_hub_parser(sub)
    return p


def main(argv=None) -> int:
    set_language(os.environ.get("COMPANION_LANG") or os.environ.get("LANG"))
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return 130
    except CompanionError as exc:
        print(visible(f"companion: {translate_error(exc)}"), file=sys.stderr)
        return 1
    except OSError as exc:
        print(visible(f"companion: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}"), file=sys.stderr)
        return 1


def cmd_replay(args) -> int:
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
    from companion.limits import StoreLimits
    from companion.store import Store

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    try:
        limits = StoreLimits.from_config(cfg.load(data_dir, getattr(args, "config", None)))
    except ValueError as exc:           # a setting out of range: one clear line
        raise SystemExit(f"companion: {exc}") from None
    return Store(data_dir, limits=limits)


def cmd_export(args) -> int:
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

    from companion import plays

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


def cmd_import(args) -> int:
    """Store a log file as a new game, finished or not (resume it from the box
    or the phone to go on).  Checked first exactly like ``replay``: exit 2 and
    ``line N: ...`` on the first bad line, and nothing is stored."""
    from companion.exports import decoded_lines, store_timeline

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


def cmd_games(args) -> int:
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


def cmd_backup(args) -> int:
    from .backup import write_backup

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    info = write_backup(data_dir, Path(args.file))
    print(_("Backup written: {file} ({games} games).", file=args.file, games=info.games))
    return 0


def cmd_restore(args) -> int:
    """Everything is checked before anything changes (exit 1 and one line
    otherwise); what the restore replaces is kept in ``replaced-<stamp>/``."""
    from .backup import restore_backup

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    info = restore_backup(Path(args.file), data_dir)
    print(_("Restored {games} games from the backup of {created_at}.", games=info.games,
            created_at=info.created_at))
    return 0


def cmd_run(args) -> int:
    """The appliance, box first: the store, the session and the box (its
    first frame on the panel) come up before the web side is even imported.
    Flask and waitress are most of the start-up time, ~1 s on a Pi Zero 2 W;
    the table sees the companion alive meanwhile, and phones join a moment
    later.  The adapters are imported only here, to run the appliance.

    The cyclic garbage collector is off until serving starts (see
    :func:`web.serve.run`): imports make tens of thousands of objects that
    live for ever, and scanning them again and again is ~8 % of the start."""
    import gc

    if args.mock and not args.host:
        # A laptop demo shows the PIN on /dev and presses buttons for anyone
        # who can reach it: it stays on this computer unless --host says so.
        args.host = "127.0.0.1"
    gc.disable()
    try:
        return _run_box_first(args)
    finally:
        gc.enable()         # already on once serving; here for a start that failed


def _run_box_first(args) -> int:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from companion.limits import StoreLimits
    from companion.session import TableSession
    from companion.store import Store

    data_dir = Path(args.data) if getattr(args, "data", None) else cfg.default_data_dir()
    config = cfg.load(data_dir, getattr(args, "config", None))
    try:
        limits = StoreLimits.from_config(config)
    except ValueError as exc:           # a setting out of range: one clear line
        print(f"companion: {exc}", file=sys.stderr)
        return 2
    mock = bool(getattr(args, "mock", False))
    config["mock"] = mock
    config["data_dir"] = str(data_dir)         # wifi.json there: the box's own Wi-Fi (web/portal.py)
    set_language(config.get("language"))
    if mock:
        os.environ.setdefault("GPIOZERO_PIN_FACTORY", "mock")
    from .backup import finish_pending

    if finish_pending(data_dir):         # a restore from the web page, staged before the restart
        logging.getLogger("companion.backup").info("a backup was restored")
        config = cfg.load(data_dir, getattr(args, "config", None))
        config.update(mock=mock, data_dir=str(data_dir))
        set_language(config.get("language"))
    store = Store(data_dir, limits=limits)
    _update_notice(store, data_dir, config)
    session = TableSession(store)
    box = _start_box(session, config, mock)
    if box is not None:
        logging.getLogger("hardware.box").info("box: first frame drawn")
    from web.serve import RESTART_EXIT, run

    code = run(args, (config, store, session, box), start_extras=_join_hub)
    if code == RESTART_EXIT and not os.environ.get("INVOCATION_ID"):
        # A restore from the web page on a companion that systemd does not
        # run (a laptop, a terminal): start again in place, as the unit would.
        os.execv(sys.executable, [sys.executable, "-m", "appliance.cli", *sys.argv[1:]])
    return code


def _update_notice(store, data_dir: Path, config: dict) -> None:
    """An update that was rolled back says so on the panel and the phones, once."""
    from companion.i18n import gettext
    from .updater import Layout, start_notice

    try:
        notice = start_notice(Layout(data=data_dir, root=Path(config.get("update_state") or Layout().root)),
                              gettext)
    except OSError:
        notice = None
    if notice:
        store.warnings.append(notice)


def _join_hub(app, store, session, config):
    """Feed the club hub when ``hub_url``/``hub_key`` are set (hub/feeder.py)."""
    from hub.box import attach

    return attach(app, store, session, config)


def _start_box(session, config: dict, mock: bool):
    """The buttons and screen, or None (the table still works from phones)."""
    try:
        import hardware

        # The pins once serving (web.serve.run): "Starting…" on the panel till then.
        box = hardware.Box(session, config, mock=mock, pins_later=True)
        box.start()
        return box
    except Exception as exc:       # missing package, no pins, a broken driver...
        import logging

        logging.getLogger("companion.web").error("running without the box (buttons and screen): %s: %s",
                                                 type(exc).__name__, exc)
        return None


def cmd_wifi(args) -> int:
    """The box's own Wi-Fi (appliance/root/wifi.py): run by companion-wifi.service."""
    import logging

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from appliance.root.wifi import main as wifi_main

    data_dir = Path(args.data) if args.data else cfg.default_data_dir()
    return wifi_main(data_dir, cfg.load(data_dir, args.config))


def cmd_setup_apply(args) -> int:
    """Set-up from a phone, the root side (appliance/root/setup_apply.py): run by companion-setup.service."""
    from appliance.root.setup_apply import main as setup_main

    return setup_main(Path(args.data) if args.data else cfg.default_data_dir())


def cmd_solve(args) -> int:
    from companion.fight_solver import solve_cli

    return solve_cli([args.game, *args.rest])


def cmd_hub(args) -> int:
    from hub.cli import run as run_hub

    return run_hub(args)


def cmd_release(args) -> int:
    from .update_cli import run as run_update

    return run_update(args)


COMMANDS = {"bundle": cmd_release, "update": cmd_release, "self-check": cmd_release, "hub": cmd_hub,
            "replay": cmd_replay, "export": cmd_export, "import": cmd_import, "games": cmd_games,
            "backup": cmd_backup, "restore": cmd_restore, "run": cmd_run, "solve": cmd_solve,
            "wifi": cmd_wifi, "setup-apply": cmd_setup_apply}

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
