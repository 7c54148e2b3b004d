"""A real PostgreSQL server for the hub's tests (no mock database).

:class:`PostgresServer` runs Debian's ``postgresql`` binaries in a temporary
folder: ``initdb`` then ``pg_ctl start`` on a free loopback port, and
``pg_ctl stop`` at the end.  The server refuses to run as root, and CI runs
as root, so there it runs as the ``postgres`` user (``runuser``), in a folder
given to that user.  One server per test session (``pg_server``); every test
gets a database of its own (``hub_db``), so tests never see each other's rows.

Where the binaries are missing the hub's tests are skipped, unless
``COMPANION_REQUIRE_POSTGRES=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from web_support import serving


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian keeps them per version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One throw-away PostgreSQL cluster: ``start()``, ``url(db)``, ``stop()``."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="companion-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_user = None
        if os.geteuid() == 0:        # the server refuses root: run it as postgres
            self.as_user = "postgres"
            entry = pwd.getpwnam("postgres")
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        os.chmod(self.dir, 0o700)

    def _run(self, *argv, check=True):
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.as_user:
            cmd = ["runuser", "-u", self.as_user, "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    def start(self) -> "PostgresServer":
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        # fsync stays on: the fault tests kill the hub, and what it said was
        # stored must be.  The socket goes in our folder, not /run/postgresql.
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w", "start")
        return self

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


def require_postgres() -> Path:
    """The bin folder, or skip (fail under ``COMPANION_REQUIRE_POSTGRES=1``)."""
    bindir = postgres_bin()
    missing = None
    if bindir is None:
        missing = "PostgreSQL's server is not installed (Debian: apt-get install postgresql)"
    else:
        try:
            import psycopg  # noqa: F401
            import openskill  # noqa: F401
        except ImportError as exc:
            missing = f"the hub's libraries are missing ({exc}): pip install -e '.[test]'"
    if missing:
        if os.environ.get("COMPANION_REQUIRE_POSTGRES") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    return bindir


@pytest.fixture(scope="session")
def pg_server():
    server = PostgresServer(require_postgres()).start()
    try:
        yield server
    finally:
        server.stop()


_numbers = itertools.count(1)


@pytest.fixture
def hub_db(pg_server):
    """The URL of a fresh, empty database on the session's server."""
    return pg_server.create_database(f"hub_{os.getpid()}_{next(_numbers)}")


# -- a hub on the test's database -------------------------------------------------

@pytest.fixture
def hub_server(hub_db):
    """The hub app under waitress (hub.serve.HubServer) on a free loopback port."""
    with running_hub(hub_db) as server:
        yield server


@contextmanager
def running_hub(url: str, port: int = 0):
    from hub.app import create_app
    from hub.serve import HubServer

    server = HubServer(create_app(url), "127.0.0.1", port)
    server.db = url
    with serving(server, "test-hub", "the hub"):
        yield server


def add_box(url: str, name: str) -> str:
    from hub.db import add_box as add, connect, migrate

    with connect(url) as conn:
        migrate(conn)
        return add(conn, name)


def third_man_log(players, tokens, first_lead: int = 0) -> list[dict]:
    """A legal Third Man match in which seat s wins ``tokens[s]`` rounds (one
    seat must hold the 3 tokens of the match, and win its last round).

    Each round takes two bids: the round's winner plays the third-highest card
    twice (7 then 4, for 2 x 7 + 2 x 4 = 22 points, past the limit of 20),
    the others 9, 8, 0 then 6, 5, 1."""
    log = [{"type": "new_game", "game": "third-man", "players": list(players), "options": {"first_lead": first_lead}}]
    return log + third_man_rounds(round_winners(tokens), first_lead)[0]


def round_winners(tokens) -> list[int]:
    """The rounds' winners, in order, of a match that ends with ``tokens``."""
    winner = tokens.index(3)
    return [s for s in range(4) if s != winner for _ in range(tokens[s])] + [winner] * 3


def third_man_rounds(winners, lead: int) -> tuple[list[dict], int]:
    """The bids of rounds won by ``winners`` in turn, ``lead`` leading the
    first; returns them and who leads after them."""
    log = []
    for w in winners:
        for mine, theirs in ((7, (9, 8, 0)), (4, (6, 5, 1))):
            others = [s for s in range(4) if s != w]
            cards = {w: mine, **dict(zip(others, theirs))}
            log.append({"type": "bid", "seat": lead, "card": cards[lead]})
            log += [{"type": "bid", "seat": s, "card": cards[s]} for s in range(4) if s != lead]
            lead = w        # the round's winner leads from its first bid on
    return log, lead


def third_man_retaken(players, tokens, new_winner: int, first_lead: int = 0, redo: bool = True) -> list[dict]:
    """A match finished with ``tokens`` whose last round is then taken back
    at the table (eight undos) and, with ``redo``, played again won by
    ``new_winner`` (and, if that does not end the match, one more round won
    by the first winner).  The whole log as the box stores it."""
    order = round_winners(tokens)
    head, lead = third_man_rounds(order[:-1], first_lead)
    last, _ = third_man_rounds(order[-1:], lead)
    log = [{"type": "new_game", "game": "third-man", "players": list(players), "options": {"first_lead": first_lead}}]
    log += head + last + [{"type": "undo"}] * 8
    if redo:
        again = [new_winner] if tokens[new_winner] + (new_winner != order[-1]) == 3 else [new_winner, order[-1]]
        log += third_man_rounds(again, lead)[0]
    return log


def public_log(actions: list[dict]) -> list[dict]:
    """What a box sends of ``actions``: its public prefix (companion.exports)."""
    import json

    from companion.exports import public_prefix

    return [json.loads(line) for line in public_prefix([json.dumps(a) for a in actions])]
