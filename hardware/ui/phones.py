"""Menu → Phones (QR code): how a phone at the table gets to the box.

:class:`JoinScreen` shows the table's address as a QR code and the PIN the
phones ask for; while the box runs its own Wi-Fi it opens on that network's
code first.  The main menu opens it (and shows it once by itself when the
box's own Wi-Fi comes up: ``menus.offer_wifi``), the New PIN question shows
it with the new PIN, and the set-up screen (hardware/ui/setup.py) opens it
on OK.
"""

from __future__ import annotations

from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .common import Layer, chunks, own_wifi, qr_image

#: The Wi-Fi page's lines beside the code: 10 px apart (the small font's
#: capitals and descenders stay clear of each other), five above the hint.
WIFI_PITCH = 10
WIFI_LINES = 5


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
        password = chunks(wifi.password, d.SMALL, width - lock, WIFI_LINES - 1)
        name = chunks(wifi.ssid, d.SMALL, width, WIFI_LINES - len(password))
        for i, line in enumerate(name):
            c.text(x, d.MARGIN + i * WIFI_PITCH, line, d.SMALL)
        y = d.MARGIN + len(name) * WIFI_PITCH + 1
        c.icon_in_line(x, y, "lock")
        for i, line in enumerate(password):
            c.text(x + lock, y + i * WIFI_PITCH, line, d.SMALL)
        c.text_fit(x, 53, _("OK: address"), width, d.SMALL)
