"""The ``companion`` command: its arguments, and which module runs each command.

    companion replay FILE          fold a game log (FILE or -) and print its public state
    companion export GAME          print a stored game as a replayable JSON Lines log
    companion export --format bgstats|csv [--from D] [--to D] [GAME]
                                   finished games as BG Stats plays or CSV rows
    companion import FILE          store a checked log as a new game
    companion games                list stored games, newest first
    companion backup [--data DIR] FILE    one file: games, roster, settings, Wi-Fi password
    companion restore FILE [--data DIR]   put such a file back
    companion run [--mock] [--board ID] ...   run the appliance (buttons, screen, web)
    companion solve fight ...      solve FIGHT? for two players
    companion hub serve|add-box|…  the club hub (see hub/cli.py)
    companion bundle ...           make a signed update bundle, or a release key
    companion update ...           install a bundle, with rollback; --worker, --recover: the root units'
    companion self-check           what a new version must pass before it is kept
    companion wifi                 the box's own Wi-Fi (root, companion-wifi.service)
    companion setup-apply          what the Setup page asked for (root, companion-setup.service)
    companion owner                choose the owner password at a root shell (a box installed by hand)

This module only parses: each command's body lives with what it commands
(:data:`COMMANDS`), and is imported only when that command runs, so that the
root units' commands never load the panel's drawing code or the web side.
``replay`` is a public contract (``docs/replay.md``): exit 0 and one JSON
object on stdout, or exit 2 and ``line N: ...`` on stderr.  No command ever
shows a traceback to the user.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from appliance import MACHINES
from companion.errors import CompanionError
from companion.i18n import _, set_language, translate_error
from companion.text import visible

#: Each command and the function that runs it, as "module:function".
COMMANDS = {
    "replay": "companion.commands:replay_command",
    "export": "companion.commands:export_command",
    "import": "companion.commands:import_command",
    "games": "companion.commands:games_command",
    "backup": "appliance.backup:backup_command",
    "restore": "appliance.backup:restore_command",
    "run": "appliance.runner:run",
    "solve": "appliance.cli:solve_command",
    "hub": "hub.cli:run",
    "bundle": "appliance.release:command",
    "update": "appliance.updates:command",
    "self-check": "appliance.selfcheck:command",
    "wifi": "appliance.root.wifi:command",
    "setup-apply": "appliance.root.setup_apply:command",
    "owner": "appliance.root.owner:command",
}
#: The boards ``run --board`` takes (hardware/boards.py: IDS, and "auto"; a test keeps them the same).
BOARDS = ("auto", "wired", "adafruit-oled-bonnet", "waveshare-oled-hat")
#: Commands that run pip or systemctl: a failing one is one line, not a traceback.
RUNS_PROGRAMS = {"bundle", "update", "self-check"}


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
    run.add_argument("--board", choices=BOARDS,
                     help=_("the box's board (wins over the board setting and COMPANION_BOARD; "
                            "auto: found at the start)"))
    run.add_argument("--dev-server", action="store_true", help=_("use Flask's development server"))
    run.add_argument("--dev-anywhere", action="store_true",
                     help=_("with --mock: let other computers open the mock box's /dev page and buttons"))

    w = sub.add_parser("wifi", help=_("raise the box's own Wi-Fi when it needs one (as root; the 'wifi' setting)"))
    w.add_argument("--data", help=_("the data folder"))
    w.add_argument("--config", help=_("a settings file (TOML)"))

    a = sub.add_parser("setup-apply", help=_("apply what the Setup page asked for: time zone, name, SSH (as root)"))
    a.add_argument("--data", help=_("the data folder"))
    a.add_argument("--physical-reset", action="store_true",
                   help=_("first, forget the owner if companion-reset-owner is on the boot partition (at boot)"))

    o = sub.add_parser("owner", help=_("choose the owner password, as root (one line on standard input)"))
    o.add_argument("--data", help=_("the data folder"))

    s = sub.add_parser("solve", help=_("solve a game position"))
    s.add_argument("game", choices=["fight"])
    s.add_argument("rest", nargs=argparse.REMAINDER)

    b = sub.add_parser("bundle", help=_("make a signed update bundle (or a release key)"))
    b.add_argument("out", nargs="?", help=_("the bundle file to write"))
    b.add_argument("--key", help=_("the private release key (or COMPANION_RELEASE_KEY)"))
    b.add_argument("--new-key", metavar="FILE", help=_("write a new private release key to FILE"))
    b.add_argument("--version", help=_("the release's version (default: the package's)"))
    b.add_argument("--machine", choices=sorted(MACHINES), default="aarch64", help=_("the box's machine"))
    b.add_argument("--wheels", help=_("take the wheels from this folder instead of PyPI"))
    b.add_argument("--source", help=_("the source tree (default: this one)"))

    u = sub.add_parser("update", help=_("install a signed update bundle, with rollback"))
    u.add_argument("file", nargs="?", help=_("the bundle"))
    u.add_argument("--status", action="store_true", help=_("print the last update's result"))
    u.add_argument("--no-wait", action="store_true", help=_("do not wait for the result"))
    u.add_argument("--worker", action="store_true", help=_("(root unit) install what was asked"))
    u.add_argument("--recover", action="store_true", help=_("(root, at boot) finish or revert a cut update"))
    u.add_argument("--data", help=_("the data folder"))

    c = sub.add_parser("self-check", help=_("check that this version can serve this box's store"))
    c.add_argument("--data", help=_("the data folder"))

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
    module, function = COMMANDS[args.command].split(":")
    try:
        return _run(args, getattr(importlib.import_module(module), function))
    except KeyboardInterrupt:
        return 130
    except CompanionError as exc:
        print(visible(f"companion: {translate_error(exc)}"), file=sys.stderr)
        return 1
    except OSError as exc:
        print(visible(f"companion: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}"), file=sys.stderr)
        return 1


def _run(args, command) -> int:
    if args.command not in RUNS_PROGRAMS:
        return command(args)
    import subprocess

    try:
        return command(args)
    except subprocess.CalledProcessError as exc:
        print(_("companion: {command} failed (exit {code})", command=" ".join(map(str, exc.cmd[:4])),
                code=exc.returncode), file=sys.stderr)
        return 1


def solve_command(args) -> int:
    from companion.fight_solver import solve_cli

    return solve_cli([args.game, *args.rest])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
