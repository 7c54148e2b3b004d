"""The one real browser every browser test module shares: a pytest plugin.

A module that drives chromium says ``pytest_plugins = ["browser_support"]``
after checking that the browser is there (tests/browser/test_browser.py's skip
rules, which also name the browser and its flags).  Playwright's sync API
allows one instance at a time, so the session-scoped ``browser`` must be
defined once for the whole run, not once per module: loaded as a plugin,
it is.  Nothing is imported before the fixture is first used, so loading
this plugin never fails on a machine without a browser.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    from test_browser import ARGS, CHROMIUM

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def long_table(tmp_path_factory):
    """One box for the page checks (tests/browser/test_browser_fit.py, _axe.py): a
    finished game of every kind (History, Statistics) and every game imported
    with long names and many rounds; ``long_table.play(game)`` makes that one
    the game at the table, ``long_table.finish(game)`` ends one of ``game``
    at the table (its last entry played there) and gives its id."""
    from browser_pages import FINISHED, GAMES, finished_game, finished_long_game, jsonl, long_game
    from test_browser import Table
    from web_support import http, pin_headers

    # Many imports, at once: more than a table's phones may send (its bucket, docs/security.md).
    table = Table(tmp_path_factory.mktemp("long-table"), import_burst=1000)
    ids = {}
    finished = {g: finished_long_game(g) for g in FINISHED}
    for game, log in ([("finished", finished_game())] + [(g, long_game(g)) for g in GAMES]
                      + [(f"finished-{g}", log) for g, log in finished.items()]):
        status, _, body = http(table.server.port, "POST", "/api/history/import", jsonl(log), pin_headers())
        assert status == 200, (game, body)
        ids[game] = body["id"]
    playing = []

    def play(game):
        if playing != [game]:
            status, _, body = http(table.server.port, "POST", f"/api/history/{ids[game]}/resume", None, pin_headers())
            assert status == 200, (game, body)
            playing[:] = [game]
            table.token = table.claim(0)
        return table

    def finish(game):
        log = finished[game]
        status, _, body = http(table.server.port, "POST", "/api/history/import", jsonl(log[:-1]), pin_headers())
        assert status == 200, (game, body)
        status, _, state = http(table.server.port, "POST", f"/api/history/{body['id']}/resume", None, pin_headers())
        assert status == 200, (game, state)
        table.post(log[-1])                   # the end comes at the table: its result is what just happened
        playing[:] = [f"at-table-{game}"]
        table.token = None                    # a finished game takes no claim
        return body["id"]

    table.ids, table.play, table.finish = ids, play, finish
    yield table
    table.close()
