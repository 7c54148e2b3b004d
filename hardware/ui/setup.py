"""Set-up from a phone, on the panel (appliance/setup.py has the why).

While the box is in set-up mode it shows :class:`SetupScreen`, drawn from
the data folder's files at every frame (one ``stat`` each when unchanged):

* its own Wi-Fi's QR code and "Scan to set up" with the PIN (the Setup
  page asks for it);
* "Joining…" and the network's name while the box tries it;
* joined: the QR code of the box's address there, the address, and
  ``<name>.local``; the box's own network is down by then;
* failed: the QR code of its own network again, and why ("Wrong
  password", "Network not found").

OK turns to the Phones screen (the Wi-Fi's name and password in letters,
the address); BACK closes it.  A box in set-up mode that runs no Wi-Fi of
its own (the laptop's ``companion run --mock``, a box on a cable) gets no
such screen over its games: with no game going on, its idle screen is the
set-up screen, with the Setup page's QR code (:func:`draw_idle_setup`).  Menu ▸ Reset settings (:class:`ResetConfirm`)
asks, then puts the box back in set-up mode; games are kept.  A box with an
owner only *asks* for it there: the owner confirms on a phone (web/owner.py).
"""

from __future__ import annotations

import logging

from appliance import owner
from appliance import setup as core
from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .common import Layer, chunks, own_wifi, qr_image
from .phones import JoinScreen

log = logging.getLogger("hardware.ui")

#: How often the box looks at the set-up files while set-up is under way.
POLL_S = 1.0


def data_dir(app):
    return app.config.get("data_dir")


def setup_mode(app) -> bool:
    try:
        return core.in_setup_mode(data_dir(app))
    except Exception:
        return False


def join_status(app) -> dict | None:
    try:
        return core.read_status(data_dir(app))
    except Exception:
        return None


def reason_text(reason: str | None) -> str:
    return _(core.REASONS.get(reason or "failed", core.REASONS["failed"]))


def box_url(status: dict, port: int) -> str:
    address = status.get("address") or ""
    return f"http://{address}/" if int(port) == 80 else f"http://{address}:{port}/"


class SetupScreen(Layer):
    private = True          # the PIN; the mirror draws the rest

    def key(self, name: str) -> None:
        if name == "ok":
            self.app.push(JoinScreen(self.app))
        elif name == "back":
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        status = join_status(self.app)
        state = status.get("state") if status else None
        if state == "joining":
            self._draw_joining(c, status)
        elif state == "joined":
            self._draw_joined(c, status)
        else:
            self._draw_own(c, status if state == "failed" else None)

    def _pin(self) -> str | None:
        join = getattr(self.app, "join", None)
        return str(join[1]) if join else None

    def _draw_own(self, c: Canvas, failed: dict | None) -> None:
        """Own network's QR at the left; at the right "Scan to set up" (or
        why the last try failed) and the PIN."""
        wifi = own_wifi(self.app)
        x = 2
        code = qr_image(wifi.qr_payload(), error="l") if wifi is not None else None
        if code is not None:
            c.paste(code, 0, (d.HEIGHT - code.height) // 2)
            x = code.width + 2
        width = d.WIDTH - x
        if failed is not None:
            lines = [_("Not joined:")] + d.wrap(reason_text(failed.get("reason")), d.STRONG, width)[:2]
            fonts = [d.SMALL] + [d.STRONG] * (len(lines) - 1)
        elif wifi is None:
            lines = d.wrap(_("Starting the box's Wi-Fi…"), d.SMALL, width)[:3]
            fonts = [d.SMALL] * len(lines)
        else:
            lines = d.wrap(_("Scan to set up"), d.STRONG, width)[:3]
            fonts = [d.STRONG] * len(lines)
        for i, (line, font) in enumerate(zip(lines, fonts)):
            c.text(x, d.MARGIN + i * 12, line, font)
        pin = self._pin()
        if pin is not None:
            c.text(x, 38, _("PIN"), d.SMALL)
            if not getattr(c, "mirror", False):
                c.text(x + d.text_width(_("PIN"), d.SMALL) + 4, 37, pin,
                       d.largest_fitting(pin, width - d.text_width(_("PIN"), d.SMALL) - 4, (d.STRONG, d.SMALL)))
        c.text_fit(x, 51, _("OK: Wi-Fi"), width, d.SMALL)

    def _draw_joining(self, c: Canvas, status: dict) -> None:
        c.header(_("Set-up"))
        c.center(18, _("Joining…"), d.STRONG)
        for i, line in enumerate(chunks(str(status.get("ssid") or ""), d.SMALL, d.WIDTH - 4, 2)):
            c.center(32 + i * 10, line, d.SMALL)
        c.footer(_("Else: own Wi-Fi again"))

    def _draw_joined(self, c: Canvas, status: dict) -> None:
        """The address's QR at the left; the address and ``<name>.local``."""
        port = int(status.get("port") or self.app.config.get("port") or 8000)
        url = box_url(status, port)
        code = qr_image(url)
        x = 2
        if code is not None:
            c.paste(code, 0, (d.HEIGHT - code.height) // 2)
            x = code.width + 3
        width = d.WIDTH - x
        c.text_fit(x, d.MARGIN, _("Joined"), width, d.STRONG)
        y = 14
        address = str(status.get("address") or "")
        for line in chunks(address, d.SMALL, width, 2):
            c.text(x, y, line, d.SMALL)
            y += 10
        host = status.get("hostname")
        if host:
            for line in chunks(f"{host}.local", d.SMALL, width, max(1, (62 - y) // 10)):
                c.text(x, y, line, d.SMALL)
                y += 10


class ResetConfirm(Layer):
    """"Reset settings?": OK sets the settings file aside and puts the box
    in set-up mode (its own Wi-Fi, the Setup page); games stay."""

    def key(self, name: str) -> None:
        if name == "back":
            self.app.pop()
        elif name == "ok":
            self.app.pop()
            folder = data_dir(self.app)
            if not folder:
                self.app.show_message(_("No data folder: nothing to reset."))
                return
            try:
                if owner.read_hash(folder) is not None:
                    # The box has an owner: the buttons only ask; the owner
                    # confirms on a phone, with the owner's password.
                    core.ask_reset(folder)
                    self.app.show_message(_("Asked: the owner confirms on a phone within {n} min.",
                                            n=core.RESET_WINDOW_S // 60), seconds=8)
                    return
                core.reset(folder)
            except OSError as exc:
                log.warning("reset settings: %s", exc)
                self.app.show_message(_("The settings could not be reset."))
                return
            self.app.close_layers()
            self.app.push(SetupScreen(self.app))
            tick(self.app)

    def draw(self, c: Canvas) -> None:
        c.header(_("Reset settings?"))
        for i, line in enumerate(d.wrap(_("Set-up from a phone again. Games are kept."), d.SMALL,
                                        d.WIDTH - 2)[:2]):
            c.center(14 + i * 11, line, d.SMALL)
        c.center(37, _("OK: reset"), d.STRONG)
        c.footer(_("BACK: keep them"))


def idle_setup(app) -> bool:
    """Whether the idle screen is the set-up screen: a box in set-up mode
    that runs no Wi-Fi of its own (the laptop's mock box, a box on a cable
    with no radio).  Nothing pops over a game there (:func:`tick` leaves
    such a box alone): with no game going on, the idle screen itself says
    "Scan to set up", with the Setup page's QR code and the PIN."""
    try:
        return setup_mode(app) and own_wifi(app) is None and join_status(app) is None
    except Exception:
        return False


def draw_idle_setup(app, c: Canvas) -> None:
    """The Setup page's address as a QR code at the left; at the right
    "Scan to set up" and the PIN (left out on the web mirror)."""
    join = getattr(app, "join", None)
    x = 2
    code = qr_image(join[0] + "setup") if join else None
    if code is not None:
        c.paste(code, 0, (d.HEIGHT - code.height) // 2)
        x = code.width + 2
    width = d.WIDTH - x
    for i, line in enumerate(d.wrap(_("Scan to set up"), d.STRONG, width)[:3]):
        c.text(x, d.MARGIN + i * 12, line, d.STRONG)
    if join is not None:
        c.text(x, 38, _("PIN"), d.SMALL)
        if not getattr(c, "mirror", False):
            pin = str(join[1])
            c.text(x + d.text_width(_("PIN"), d.SMALL) + 4, 37, pin,
                   d.largest_fitting(pin, width - d.text_width(_("PIN"), d.SMALL) - 4, (d.STRONG, d.SMALL)))
    c.text_fit(x, 51, _("OK: menu"), width, d.SMALL)


def showing(app) -> bool:
    return any(isinstance(layer, SetupScreen) for layer in app.layers)


def tick(app) -> None:
    """On the box's thread after each event, and every second while set-up
    is under way: the set-up screen comes up (once per state) when the table
    is free, and it is redrawn as the join goes on."""
    if not data_dir(app):
        return
    # Only where the box runs its Wi-Fi unit (wifi.json there): a laptop's
    # mock box, or a box on a cable with no radio, is never stopped by it.
    active = showing(app) or (setup_mode(app) and (own_wifi(app) is not None or join_status(app) is not None))
    if not active:
        return
    if "setup" not in app.timers:
        app.set_timer("setup", POLL_S, lambda: None)      # the next look; due() calls tick again
    status = join_status(app)
    key = (status or {}).get("state"), (status or {}).get("reason"), own_wifi(app) is not None
    if key == getattr(app, "setup_seen", None):
        return
    app.setup_seen = key
    if showing(app):
        return
    # Over the Phones screen (it has the same Wi-Fi code), never over a menu
    # being used or a seat choosing a secret.
    busy = ((app.layers and not isinstance(app.layers[-1], JoinScreen))
            or (app.controller is not None and app.controller.is_private()))
    if not busy:
        app.push(SetupScreen(app))
