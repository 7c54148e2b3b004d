"""The finished game's page as a QR code on the panel (Menu → "Game page").

A finished game's page on the box (``/history/<id>``) offers "Add to BG
Stats": that link carries the whole play and is far longer than the panel's
QR code holds (64 px at 2 px per module: about 50 characters), so the panel
gives the page's address instead, and a phone without the page open gets
there in one scan.  Shared by every game: the menu offers it once the game
at the table is over.  Nothing here is secret (the page is public to
read): the mirror shows it too.
"""

from __future__ import annotations

from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .common import Layer, chunks, qr_image


def page_url(app) -> str | None:
    """The address of the game at the table's page, or None (no web page, no game)."""
    game_id = app.session.game_id
    if app.join is None or game_id is None:
        return None
    return f"{app.join[0].rstrip('/')}/history/{game_id}"


def offered(app) -> bool:
    """Whether the menu offers the screen: a finished game at the table, and the web page running."""
    return app.has_game() and bool(app.public.get("finished")) and page_url(app) is not None


class GamePageScreen(Layer):
    """The QR code at the left; at the right "Game N", then what a scan
    opens.  OK or BACK closes."""

    def key(self, name: str) -> None:
        if name in ("ok", "back"):
            self.app.pop()

    def draw(self, c: Canvas) -> None:
        url = page_url(self.app)
        if url is None:
            c.header(_("Game page"))
            c.center(24, _("The web page is not running."), d.SMALL)
            return
        # Level M where it fits (a longer host name needs L to stay at 2 px a module).
        code = qr_image(url) or qr_image(url, error="l")
        x = 2
        if code is not None:
            c.paste(code, 0, (d.HEIGHT - code.height) // 2)
            x = code.width + 3
        width = d.WIDTH - x
        c.text_fit(x, 2, _("Game {id}", id=self.app.session.game_id), width, d.SMALL)
        if code is None:        # no code fits: the address, to type, cut anywhere (a host name has no words)
            for i, line in enumerate(chunks(url.split("//", 1)[-1], d.SMALL, d.WIDTH - 2, 4)):
                c.text(2, 15 + i * 11, line, d.SMALL)
            return
        lines = d.wrap(_("BG Stats: scan for this game's page"), d.SMALL, width)
        for i, line in enumerate(lines[:4]):
            c.text(x, 15 + i * 11, line, d.SMALL)
