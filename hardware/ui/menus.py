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
"""

from __future__ import annotations

import logging
from pathlib import Path

from companion import games
from companion.i18n import LANGUAGES, _, normalise, set_language
from companion.roster import Roster
from appliance.settings_file import save_setting  # noqa: F401  (also the Language and Speak rows')
from companion.timeline import MAX_NAME

from .. import draw as d
from ..draw import Canvas

log = logging.getLogger("hardware.ui")

ROW_H = d.LINE
ROWS = 3            # text rows on the grid's pitch under the header (d.ROW_Y + i * d.PITCH)

# Each language named in itself: found whatever the screen speaks now.
LANGUAGE_NAMES = {"en": "English", "fr": "Français"}


class Layer:
    """A screen over the game: gets every button, draws the whole frame.
    ``private`` layers show the PIN: the web mirror draws them on a canvas
    marked ``mirror``, where they leave the PIN out."""

    private = False

    def __init__(self, app):
        self.app = app

    def key(self, name: str) -> None:
        if name == "back":
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        raise NotImplementedError


class ListLayer(Layer):
    """A title and rows: UP/DOWN move (wrapping), OK picks, BACK leaves."""

    title = ""

    def __init__(self, app, cursor: int = 0):
        super().__init__(app)
        self.cursor = cursor

    def rows(self) -> list[tuple[str, str]]:
        """(label, right-hand text) of each row."""
        raise NotImplementedError

    def pick(self, index: int) -> None:
        raise NotImplementedError

    def key(self, name: str) -> None:
        n = len(self.rows())
        if name in ("up", "down") and n:
            self.cursor = (self.cursor + (-1 if name == "up" else 1)) % n
        elif name == "ok" and n:
            self.pick(min(self.cursor, n - 1))
        elif name == "back":
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        rows = self.rows()
        self.cursor = min(self.cursor, max(0, len(rows) - 1))
        c.header(self.title, f"{self.cursor + 1}/{len(rows)}" if len(rows) > ROWS else "")
        first = max(0, min(self.cursor - ROWS + 2, len(rows) - ROWS)) if self.cursor >= ROWS - 1 else 0
        for i, (label, right) in enumerate(rows[first:first + ROWS]):
            c.row(d.ROW_Y + i * d.PITCH, label, first + i == self.cursor, height=ROW_H, right=right)


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
            from .clock import open_clock
            items.append((_("Turn clock"), "\u25b8", lambda: open_clock(self.app)))
        items.append((_("Phones (QR code)"), "", lambda: self.app.push(JoinScreen(self.app))))
        from .game_page import GamePageScreen, offered
        if offered(self.app):           # a finished game: its page (and "Add to BG Stats") in one scan
            items.append((_("Game page (QR code)"), "", lambda: self.app.push(GamePageScreen(self.app))))
        if self.app.has_game():
            items.append((_("Phone seats"), "\u25b8", lambda: self.app.push(ClaimsMenu(self.app))))
        if self.app.join is not None:
            items.append((_("New PIN"), "", lambda: self.app.push(NewPinConfirm(self.app))))
        from .brightness import entry as brightness_entry
        items.append(brightness_entry(self.app))
        speak = self.app.config.get("speak") is True
        items.append((_("Speak"), _("on") if speak else _("off"), lambda: switch_speak(self.app, not speak)))
        if getattr(self.app, "hub", None) is not None:
            from .hub import HubScreen
            items.append((_("Hub"), "\u25b8", lambda: self.app.push(HubScreen(self.app))))
        current = box_language(self.app)
        items.append((_("Language"), LANGUAGE_NAMES.get(current, current),
                      lambda: self.app.push(LanguagePicker(self.app))))
        if self.app.config.get("data_dir"):
            from .setup import ResetConfirm
            items.append((_("Reset settings"), "", lambda: self.app.push(ResetConfirm(self.app))))
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
        from .hub import offer
        self.offer = offer(app) if getattr(app, "hub", None) is not None else None
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
                from .hub import HubOffer
                self.app.push(HubOffer(self.app, self.offer))
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
    store = getattr(app.session, "store", None)
    folder = getattr(store, "dir", None)
    if folder is not None:
        save_language(Path(folder) / "companion.toml", language)


def save_language(path: Path, language: str) -> bool:
    """Set the top-level ``language`` of the settings file ``path`` (see
    :func:`save_setting`).  (``COMPANION_LANG``, and ``--config FILE``
    which replaces this file, still win at the next start.)"""
    return save_setting(path, "language", language)


def switch_speak(app, on: bool) -> None:
    """Menu → Speak: the box's voice (hardware/voice.py) on or off from the
    next change on, kept in ``<data>/companion.toml`` as ``speak``."""
    app.config["speak"] = bool(on)
    store = getattr(app.session, "store", None)
    folder = getattr(store, "dir", None)
    if folder is not None:
        save_setting(Path(folder) / "companion.toml", "speak", bool(on))


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


class JoinScreen(Layer):
    """The table's address as a QR code (2 px per module) and the PIN
    (left out on the web mirror: the PIN is for the people at the table).

    While the box runs its own Wi-Fi (appliance/wifi.py) the screen opens on
    the network's QR code (``WIFI:T:WPA;S:…;P:…;;``: a phone's camera joins
    it, and the phone's sign-in window then opens the scoreboard by itself);
    OK turns to the address and PIN and back, BACK closes.  The Wi-Fi page
    is on the mirror too: whoever reaches the mirror is on that network."""

    private = True

    def __init__(self, app):
        super().__init__(app)
        self.page = "wifi" if self.wifi is not None else "address"

    @property
    def wifi(self):
        """Read at every draw (one ``stat``): a network that went down while
        the screen is open must not stay on it as a QR code nobody can join."""
        return own_wifi(self.app)

    def key(self, name: str) -> None:
        if name == "ok" and self.wifi is not None:
            self.page = "address" if self.page == "wifi" else "wifi"
        elif name in ("ok", "back"):
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        wifi = self.wifi
        if self.page == "wifi" and wifi is not None:
            self._draw_wifi(c, wifi)
            return
        join = self.app.join
        if join is None:
            c.header(_("Phones"))
            c.center(24, _("The web page is not running."), d.SMALL)
            return
        url, pin = join
        code = qr_image(url)
        x = 2
        if code is not None:
            top = (d.HEIGHT - code.height) // 2
            c.paste(code, 0, top)
            x = code.width + 3
        else:
            c.text_fit(0, 52, url, d.WIDTH, d.SMALL)
        c.text(x, 2, _("Join:"), d.SMALL)
        c.text(x, 14, _("PIN"), d.SMALL)
        if not getattr(c, "mirror", False):
            c.text(x, 25, str(pin), d.largest_fitting(str(pin), d.WIDTH - x, (d.BIG, d.TITLE, d.STRONG, d.SMALL)))
        if code is not None:
            host = url.split("//", 1)[-1].rstrip("/")
            lines = d.wrap(host.replace(":", " :").replace("/", " /"), d.SMALL, d.WIDTH - x)
            for i, line in enumerate(lines[:2]):
                c.text(x, 43 + i * 10, line.replace(" :", ":").replace(" /", "/"), d.SMALL)

    def _draw_wifi(self, c: Canvas, wifi) -> None:
        """The network's QR code at the left; at the right its name, then 🔒
        and its password (no label: "mot de passe" would not fit beside the
        code), each whole over as many lines as it needs (five in all, the
        name one at least: typed by hand where a phone cannot scan; a
        63-character password has no code and the whole width), then
        "OK: address"."""
        code = qr_image(wifi.qr_payload(), error="l")
        x = 2
        if code is not None:
            c.paste(code, 0, (d.HEIGHT - code.height) // 2)
            x = code.width + 2
        width = d.WIDTH - x
        lock = d.icon_width("lock")
        password = _chunks(wifi.password, d.SMALL, width - lock, WIFI_LINES - 1)
        name = _chunks(wifi.ssid, d.SMALL, width, WIFI_LINES - len(password))
        for i, line in enumerate(name):
            c.text(x, d.MARGIN + i * WIFI_PITCH, line, d.SMALL)
        y = d.MARGIN + len(name) * WIFI_PITCH + 1
        c.icon_in_line(x, y, "lock")
        for i, line in enumerate(password):
            c.text(x + lock, y + i * WIFI_PITCH, line, d.SMALL)
        c.text_fit(x, 53, _("OK: address"), width, d.SMALL)


#: The Wi-Fi page's lines beside the code: 10 px apart (the small font's
#: capitals and descenders stay clear of each other), five above the hint.
WIFI_PITCH = 10
WIFI_LINES = 5


def _chunks(text: str, font, width: int, lines: int) -> list[str]:
    """``text`` cut anywhere (a password has no words) into at most
    ``lines`` lines of ``width`` pixels, the last shortened if it must be."""
    out: list[str] = []
    while text and len(out) < lines - 1:
        n = len(text)
        while n > 1 and d.text_width(text[:n], font) > width:
            n -= 1
        out.append(text[:n])
        text = text[n:]
    if text:
        out.append(d.fit(text, font, width))
    return out


def own_wifi(app):
    """The box's own Wi-Fi (a :class:`appliance.wifi.Status`) or None: read
    from the data folder's ``wifi.json`` (one ``stat`` when unchanged)."""
    from appliance.wifi import own_status

    try:
        return own_status(app.config.get("data_dir"))
    except Exception:            # a status that cannot be read: the address screen, as before
        return None


def offer_wifi(app) -> bool:
    """The box's own Wi-Fi just came up: show its QR code once, unless the
    table is busy (a menu open, a seat picking a secret)."""
    from . import setup

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


def qr_image(url: str, scale: int = 2, error: str = "m"):
    """The QR code of ``url`` as a mode "1" image with lit quiet zone and dark
    modules (scanners want dark on light), or None if it cannot fit 64 px at
    2 px per module (1 px per module does not scan).  Error level L for the
    Wi-Fi code: its ~46 characters fit version 3 (29 modules) only at L."""
    import segno        # here, not at the top: 25 ms of imports the box's first frame need not wait for

    code = segno.make_qr(url, error=error)
    size = code.symbol_size(scale=1, border=0)[0]
    for border in (2, 1):
        if (size + 2 * border) * scale <= d.HEIGHT:
            break
    else:
        return None
    from PIL import Image

    side = (size + 2 * border) * scale
    image = Image.new("1", (side, side), d.ON)
    pixels = image.load()
    for r, row in enumerate(code.matrix):
        for col, dark in enumerate(row):
            if dark:
                for dy in range(scale):
                    for dx in range(scale):
                        pixels[(col + border) * scale + dx, (r + border) * scale + dy] = d.OFF
    return image


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
