"""The club hub on the box's screen: its status and the tournament offer.

Only when the box is joined to a hub (``App.hub``: the feeder, hub/feeder.py,
handed over by hub/box.py).  Everything here reads :meth:`Feeder.status`,
what the feeder's own thread last stored: the box's thread never waits for
the network.

* **Status**: a line on the idle screen ("Hub: OK · 0 to send") and Menu →
  Hub (reachable, or not since 14:02; games and lines still to send).
* **The tournament offer**: when the hub seats this table (a round of a
  tournament), the box shows it once, as soon as the table is free (no game,
  or the last one over): "Round 2, table 3" and the players; OK starts that
  game with exactly those players in that seat order, BACK leaves it for
  later.  It stays first in New game ("Tournament R2 · T3") until a game of
  it is started here (from the buttons or a phone); then the feeder stops
  offering it.
"""

from __future__ import annotations

import time

from companion import games
from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .common import Layer

POLL_S = 1.0        # how often the box looks at the feeder's status (a dict read, no I/O): an offer shows within 2 s


def status(app) -> dict | None:
    """The feeder's last status, or None when no hub is configured."""
    feeder = getattr(app, "hub", None)
    if feeder is None:
        return None
    try:
        return feeder.status()
    except Exception:         # the screen must never fail for the hub's sake
        return None


def offer(app) -> dict | None:
    """The tournament table on offer, if its game is one this box plays."""
    st = status(app)
    assignment = (st or {}).get("offer")
    if not assignment or assignment.get("game") not in games.available():
        return None
    return assignment


def reach_text(st: dict) -> str:
    if st.get("reachable") is True:
        return _("Reachable")
    if st.get("reachable") is False:
        return _("Not reachable")
    return _("Not reached yet")


def idle_line(st: dict) -> str:
    """The idle screen's line: "Hub: OK · 0 to send" (games not yet all sent)."""
    games_behind = (st.get("behind") or {}).get("games", 0)
    if st.get("reachable") is True:
        return _("Hub: OK · {n} to send", n=games_behind)
    return _("Hub: away · {n} to send", n=games_behind)


def tick(app) -> None:
    """On the box's thread, after each event and every few seconds while a
    hub is configured: show a new tournament offer once, when the table is free."""
    if getattr(app, "hub", None) is None:
        return
    if "hub" not in app.timers:
        app.set_timer("hub", POLL_S, lambda: None)      # the next look; due() calls tick again
    assignment = offer(app)
    if assignment is None:
        return
    key = (assignment.get("tournament"), assignment.get("round"), assignment.get("table"))
    if key in app.hub_seen or app.notices or app.claim_news or app.layers:
        return
    if app.controller is not None and not app.public.get("finished"):
        return                  # a game under way: the offer waits in New game
    app.hub_seen.add(key)
    app.push(HubOffer(app, assignment))


def start(app, assignment: dict) -> bool:
    """Start the tournament table's game: its players in its seat order, the
    game's default options (as the set-up list's Start would)."""
    players = list(assignment["players"])
    action = {"type": "new_game", "game": assignment["game"], "players": players}
    options = {o["key"]: o["default"](players) for o in app.controller_class(assignment["game"]).OPTIONS}
    if options:
        action["options"] = options
    return app.submit(action)


class HubOffer(Layer):
    """"Round 2, table 3" and the table's players: OK starts, BACK later."""

    def __init__(self, app, assignment: dict):
        super().__init__(app)
        self.assignment = assignment

    def key(self, name: str) -> None:
        if name == "back":
            self.app.pop()
        elif name == "ok":
            self.app.pop()
            if start(self.app, self.assignment):
                self.app.close_layers()

    def draw(self, c: Canvas) -> None:
        a = self.assignment
        c.header(_("Tournament"))
        c.center(14, _("Round {round}, table {table}", round=a.get("round"), table=a.get("table")), d.STRONG)
        lines = d.wrap(", ".join(a["players"]), d.SMALL, d.WIDTH - 2)
        if len(lines) > 2:
            lines = lines[:1] + [d.fit(" ".join(lines[1:]), d.SMALL, d.WIDTH - 2)]
        for i, line in enumerate(lines):
            c.center(27 + i * 11, line, d.SMALL)
        c.footer(_("OK: start · BACK: later"))


class HubScreen(Layer):
    """Menu → Hub: reachable or since when not, and how much is still to send."""

    def key(self, name: str) -> None:
        if name in ("ok", "back"):
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        st = status(self.app) or {}
        behind = st.get("behind") or {}
        c.header(_("Hub"))
        c.text_fit(1, 15, reach_text(st), d.WIDTH - 2, d.STRONG)
        if st.get("reachable") is False and st.get("down_since"):
            since = _("since {time}", time=time.strftime("%H:%M", time.localtime(st["down_since"])))
        else:
            since = str(st.get("url") or "").split("//", 1)[-1]     # which hub: its host
        c.text_fit(1, 27, since, d.WIDTH - 2, d.SMALL)
        c.text_fit(1, 39, _("Games to send: {n}", n=behind.get("games", 0)), d.WIDTH - 2, d.SMALL)
        c.text_fit(1, 51, _("Lines to send: {n}", n=behind.get("lines", 0)), d.WIDTH - 2, d.SMALL)
