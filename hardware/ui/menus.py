"""The box's menus: layers drawn over the game (or the idle screen).

BACK (short) opens the main menu from a game screen:

    Back to game · New game · Undo last action · Phones (QR code) · Game page
    (QR code, once the game is over) · Phone seats · New PIN · Brightness · Speak
    · Language

Speak turns the box's voice on or off (hardware/voice.py: reveals, round
ends and the winner said aloud by espeak-ng), kept as ``speak`` in
``<data>/companion.toml``.

Phone seats lists the seats and the phones that claimed them: OK on a
claimed seat releases it (that phone's token stops working at once).  New
PIN asks first, then draws a PIN and shows it with the QR code: the old PIN
stops working, the phones keep their seats.

Language lists the box's languages, each named in itself (English,
Français): the choice applies at once to the box's screens (and to phones
whose browser asks for neither language), and is kept in
``<data>/companion.toml`` for the next start.

Hub (only when the box is joined to a club hub): reachable or not, games
still to send (hardware/ui/hub.py).

New game → pick the game (``companion.games.available()``; first, the
tournament table the club hub seats here, if any) → the set-up
list: "Start ▸" first (so OK, OK, OK starts a game with the players of the
previous one), then the game's options, the number of players when the game
allows several, and one row per seat; OK on a seat opens the table's roster
(companion/roster.py: names typed on a phone, the last game's players
first), without the ones other seats already have.  The settings' ``names``
only seed an empty roster.  While phones hold seats, a row "Phone seats:
release / keep" says whether they keep them in the new game (release unless
the table says so).

A long press of BACK, anywhere, asks "Undo the last action?" and names it
("Ben's locked card": a secret entry by its seat only); OK = undo.

The rows that open a screen of their own find it in its module (phones.py,
clock.py, game_page.py, brightness.py, hub.py, setup.py): this menu imports
those screens, and none of them imports it.  What they share with it (the
layers, the QR code, text cut into lines, a setting kept for the next
start) is in common.py.
"""

from __future__ import annotations

import logging
from pathlib import Path

from companion import games
from companion.i18n import LANGUAGES, _, normalise, set_language
from companion.roster import Roster
from appliance.settings_file import save_setting
from companion.timeline import MAX_NAME

from .. import draw as d
from ..draw import Canvas
from . import brightness, clock, game_page, hub, setup
from .common import Layer, ListLayer, own_wifi, save_box_setting
from .phones import JoinScreen

log = logging.getLogger("hardware.ui")

# Each language named in itself: found whatever the screen speaks now.
LANGUAGE_NAMES = {"en": "English", "fr": "Français"}


class MainMenu(ListLayer):
    @property
    def title(self) -> str:          # drawn in the language of the moment (it can change here)
        return _("Menu")

    def entries(self):
        items = []
        if self.app.has_game():
            items.append((_("Back to game"), "", self.app.pop))
        items.append((_("New game"), "\u25b8", lambda: self.app.push(GamePicker(self.app))))
        if self.app.has_game():
            items.append((_("Undo last action"), "", lambda: self.app.push(UndoConfirm(self.app))))
            items.append((_("Turn clock"), "\u25b8", lambda: clock.open_clock(self.app)))
        items.append((_("Phones (QR code)"), "", lambda: self.app.push(JoinScreen(self.app))))
        if game_page.offered(self.app):     # a finished game: its page (and "Add to BG Stats") in one scan
            items.append((_("Game page (QR code)"), "", lambda: self.app.push(game_page.GamePageScreen(self.app))))
        if self.app.has_game():
            items.append((_("Phone seats"), "\u25b8", lambda: self.app.push(ClaimsMenu(self.app))))
        if self.app.join is not None:
            items.append((_("New PIN"), "", lambda: self.app.push(NewPinConfirm(self.app))))
        items.append(brightness.entry(self.app))
        speak = self.app.config.get("speak") is True
        items.append((_("Speak"), _("on") if speak else _("off"), lambda: switch_speak(self.app, not speak)))
        if getattr(self.app, "hub", None) is not None:
            items.append((_("Hub"), "\u25b8", lambda: self.app.push(hub.HubScreen(self.app))))
        current = box_language(self.app)
        items.append((_("Language"), LANGUAGE_NAMES.get(current, current),
                      lambda: self.app.push(LanguagePicker(self.app))))
        if self.app.config.get("data_dir"):
            items.append((_("Reset settings"), "", lambda: self.app.push(setup.ResetConfirm(self.app))))
        return items

    def rows(self):
        return [(label, right) for label, right, _act in self.entries()]

    def pick(self, index):
        self.entries()[index][2]()


class GamePicker(ListLayer):
    """The games; first, when the club hub seats this table for a
    tournament round, that table ("Tournament R2 · T3": hardware/ui/hub.py)."""

    def __init__(self, app):
        super().__init__(app)
        self.title = _("Pick the game")
        self.ids = games.available()
        self.offer = hub.offer(app) if getattr(app, "hub", None) is not None else None
        current = app.public.get("game")
        if current in self.ids and self.offer is None:
            self.cursor = self.ids.index(current)

    def rows(self):
        rows = [(_(games.get(gid).title), "") for gid in self.ids]
        if self.offer is not None:
            rows.insert(0, (_("Tournament R{round} · T{table}", round=self.offer.get("round"),
                              table=self.offer.get("table")), "\u25b8"))
        return rows

    def pick(self, index):
        if self.offer is not None:
            if index == 0:
                self.app.push(hub.HubOffer(self.app, self.offer))
                return
            index -= 1
        self.app.push(Setup(self.app, self.ids[index]))


class Setup(ListLayer):
    """The new game: Start, options, number of players, names."""

    def __init__(self, app, game_id: str):
        super().__init__(app)
        self.game = games.get(game_id)
        self.title = _(self.game.title)
        self.options = list(app.controller_class(game_id).OPTIONS)
        previous, self.names = roster_names(app)
        lo, hi = self.game.min_players, min(self.game.max_players, 8)
        count = len(previous) if lo <= len(previous) <= hi else max(lo, min(4, hi))
        self.players = default_players(count, previous, self.names)
        self.values = {o["key"]: o["default"](self.players) for o in self.options}
        self.keep_claims = False          # phones' seats end with the game unless the table keeps them

    def _entries(self):
        entries = [("start", _("Start"), "\u25b8")]
        for o in self.options:
            choices = dict(o["choices"](self.players))
            label = o["label"]            # an N_() text of the controller's OPTIONS
            entries.append((("option", o), _(label), str(choices.get(self.values[o["key"]], ""))))
        if self.game.min_players != min(self.game.max_players, 8):
            entries.append(("count", _("Players"), str(len(self.players))))
        for seat, name in enumerate(self.players):
            entries.append((("seat", seat), f"{seat + 1}. {name}", ""))
        if self.app.claims:
            entries.append(("keep", _("Phone seats"), _("keep") if self.keep_claims else _("release")))
        return entries

    def rows(self):
        return [(label, right) for _what, label, right in self._entries()]

    def pick(self, index):
        what = self._entries()[index][0]
        if what == "start":
            action = {"type": "new_game", "game": self.game.id, "players": list(self.players)}
            if self.values:
                action["options"] = dict(self.values)
            if self.keep_claims and self.app.claims:
                action["keep_claims"] = True
            if self.app.submit(action):
                self.app.close_layers()
        elif what == "keep":
            self.keep_claims = not self.keep_claims
        elif what == "count":
            lo, hi = self.game.min_players, min(self.game.max_players, 8)
            count = len(self.players) + 1 if len(self.players) < hi else lo
            self.players = default_players(count, self.players, self.names)
            self._clamp_options()
        elif what[0] == "option":
            option = what[1]
            values = [v for v, _text in option["choices"](self.players)]
            current = self.values[option["key"]]
            self.values[option["key"]] = values[(values.index(current) + 1) % len(values)] if current in values else values[0]
        elif what[0] == "seat":
            self.app.push(NamePicker(self.app, self, what[1]))

    def _clamp_options(self):
        for o in self.options:
            values = [v for v, _text in o["choices"](self.players)]
            if self.values[o["key"]] not in values:
                self.values[o["key"]] = o["default"](self.players)


class NamePicker(ListLayer):
    """The table's roster for one seat: its current name (✓) first, then
    everyone no other seat has, the last game's players first."""

    def __init__(self, app, setup: Setup, seat: int):
        super().__init__(app)
        self.setup, self.seat = setup, seat
        self.title = _("Seat {n}", n=seat + 1)
        taken = {n for s, n in enumerate(setup.players) if s != seat}
        current = setup.players[seat]
        self.names = [current] + [n for n in roster_names(app)[1] if n not in taken and n != current]

    def rows(self):
        return [(name, "\u2713" if i == 0 else "") for i, name in enumerate(self.names)]

    def pick(self, index):
        self.setup.players[self.seat] = self.names[index]
        self.app.pop()


class LanguagePicker(ListLayer):
    """The box's language: OK switches at once and keeps the choice."""

    def __init__(self, app):
        super().__init__(app)
        self.codes = list(LANGUAGES)
        current = box_language(app)
        self.cursor = self.codes.index(current) if current in self.codes else 0

    @property
    def title(self) -> str:
        return _("Language")

    def rows(self):
        current = box_language(self.app)
        return [(LANGUAGE_NAMES.get(code, code), "\u2713" if code == current else "") for code in self.codes]

    def pick(self, index):
        switch_language(self.app, self.codes[index])
        self.app.pop()


def box_language(app) -> str:
    return normalise(app.config.get("language"))


def switch_language(app, language: str) -> None:
    """Speak ``language`` on the box from the next frame on.

    Runs on the box's worker, whose context holds the box's language
    (hardware/box.py sets it at start); ``config["language"]`` is the
    settings dict the web app shares, so phones that ask for neither
    language follow too.  The choice is saved for the next start."""
    language = normalise(language)
    app.config["language"] = language
    app.language = language
    set_language(language)
    save_box_setting(app, "language", language)


def save_language(path: Path, language: str) -> bool:
    """Set the top-level ``language`` of the settings file ``path`` (see
    :func:`save_setting`).  (``COMPANION_LANG``, and ``--config FILE``
    which replaces this file, still win at the next start.)"""
    return save_setting(path, "language", language)


def switch_speak(app, on: bool) -> None:
    """Menu → Speak: the box's voice (hardware/voice.py) on or off from the
    next change on, kept in ``<data>/companion.toml`` as ``speak``."""
    app.config["speak"] = bool(on)
    save_box_setting(app, "speak", bool(on))


class UndoConfirm(Layer):
    """"Undo the last action?" and what it is ("Ben's locked card", "the
    trick won by Chloé (25)"), from :meth:`App.describe_undo`: a secret
    entry is named by its seat only.  Read at every frame: should a phone
    enter something meanwhile, the prompt names what OK would now undo."""

    def key(self, name: str) -> None:
        if name not in ("ok", "back"):
            return
        self.app.pop()
        if name == "ok":
            if self.app.submit({"type": "undo"}):
                self.app.close_layers()

    def draw(self, c: Canvas) -> None:
        c.header(_("Undo the last action?"))
        what = self.app.describe_undo()
        lines = d.wrap(what, d.STRONG, d.WIDTH - 2)[:3] if what else []
        if not lines:
            nothing = self.app.last_step() is None
            c.center(24, _("Nothing to undo yet") if nothing else _("OK: undo"), d.STRONG)
        for i, line in enumerate(lines):
            c.center(16 + i * 12 + (6 if len(lines) < 3 else 0), line, d.STRONG)
        c.footer(_("OK: undo · BACK: keep it"))


class ClaimsMenu(ListLayer):
    """The seats and the phones that claimed them; OK releases a claim."""

    @property
    def title(self) -> str:
        return _("Phone seats")

    def rows(self):
        players = self.app.public.get("players") or []
        return [(f"{seat + 1}. {name}", d.fit(self.app.claims.get(seat, ""), d.BODY, 64))
                for seat, name in enumerate(players)]

    def pick(self, index):
        if index in self.app.claims:
            self.app.release_claim(index)
            self.app.show_message(_("Seat {n} released: that phone cannot read or enter anything for it.",
                                    n=index + 1))


class NewPinConfirm(Layer):
    """Draw a new PIN?  (Someone may be guessing it, or it was seen by
    someone who left the table.)  OK draws it and shows it with the QR code."""

    def key(self, name: str) -> None:
        if name == "back":
            self.app.pop()
        elif name == "ok":
            self.app.pop()
            if self.app.new_pin() is not None:
                self.app.push(JoinScreen(self.app))

    def draw(self, c: Canvas) -> None:
        c.header(_("New PIN"))
        text = _("Old PIN stops working; seats stay.")
        for i, line in enumerate(d.wrap(text, d.SMALL, d.WIDTH - 2)[:2]):
            c.center(14 + i * 11, line, d.SMALL)
        c.center(37, _("OK: new PIN"), d.STRONG)
        c.footer(_("BACK: keep it"))            # the hint row: its descenders clear of the last one


def offer_wifi(app) -> bool:
    """The box's own Wi-Fi just came up: show its QR code once, unless the
    table is busy (a menu open, a seat picking a secret)."""
    if setup.setup_mode(app) and own_wifi(app) is not None:    # the set-up screen has the Wi-Fi's code
        setup.tick(app)
        return False                    # the caller redraws: the screen's content changed
    wifi = own_wifi(app)
    if wifi is None or getattr(app, "wifi_offered", None) == wifi.ssid:
        return False
    # A notice or a claim is drawn over it and leaves it there when it goes.
    busy = app.layers or (app.controller is not None and app.controller.is_private())
    if busy:
        return False
    app.wifi_offered = wifi.ssid
    app.push(JoinScreen(app))
    return True


def roster_names(app) -> tuple[list[str], list[str]]:
    """(the last game's players, the whole roster in the box's order), read
    from the store under the session's lock (the box's thread may read it);
    an empty roster is seeded from the settings' ``names`` first.  Without a
    store (or if it cannot be read) the settings' names are the list."""
    if getattr(app.session, "store", None) is None:
        return list(app.public.get("players") or []), app.names()
    roster = Roster(app.session)
    try:
        roster.seed(app.names())
        return roster.last_names(), roster.names()
    except Exception as exc:                 # a store that cannot be read or written: play on
        log.warning("the roster is not available: %s", exc)
        return list(app.public.get("players") or []), app.names()


def default_players(count: int, previous: list[str], names: list[str]) -> list[str]:
    """``count`` distinct names: the previous game's first, then the settings' list."""
    chosen: list[str] = []
    for name in list(previous) + list(names):
        if len(chosen) == count:
            break
        if name and name not in chosen and len(name) <= MAX_NAME:
            chosen.append(name)
    n = 1
    while len(chosen) < count:
        candidate = _("Player {n}", n=n)
        if candidate not in chosen:
            chosen.append(candidate)
        n += 1
    return chosen
