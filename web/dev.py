"""The developer's window on the box (mock mode) and the OLED mirror.

    GET  /dev                          page: live OLED frame, virtual buttons, join QR + PIN (mock only)
    GET  /dev/frames                   event stream: one `frame` event per new frame (mock only)
    POST /dev/buttons/<name>/press     drive the mock pin: a short press (mock only)
    POST /dev/buttons/<name>/hold      a long press (mock only)
    GET  /oled.png                     the current frame as PNG (mock and real box)

The page shows the PIN, so it exists only in mock mode: on a real box the
PIN is read off the OLED by the people at the table.
"""

from __future__ import annotations

import logging
import threading

from flask import Blueprint, Response, abort, jsonify, render_template, request

from companion.i18n import N_

from .api import open_stream
from .app import companion
from .errors import ApiError

bp = Blueprint("dev", __name__)
log = logging.getLogger("companion.web")

# One press at a time: the mock pins are a shared, physical-like resource.
_press_lock = threading.Lock()


def _mock_only():
    c = companion()
    if not c.mock:
        raise ApiError(404, N_("the /dev pages exist only in mock mode (companion run --mock)"))
    return c


def _box(c):
    if c.box is None:
        raise ApiError(503, N_("no box is running (see the companion's log)"))
    return c.box


@bp.get("/dev")
def page():
    c = _mock_only()
    url = c.join_url(request.host_url)
    names = list(getattr(c.box, "button_names", []) or []) if c.box is not None else []
    return render_template("dev.html", url=url, pin=c.pin, qr=_qr_svg(url), buttons=names,
                           has_box=c.box is not None)


@bp.get("/dev/frames")
def frames():
    c = _mock_only()
    _box(c)
    return open_stream(c.frames)


@bp.post("/dev/buttons/<name>/<how>")
def button(name: str, how: str):
    c = _mock_only()
    box = _box(c)
    if how not in ("press", "hold"):
        abort(404)
    names = list(getattr(box, "button_names", []) or [])
    if name != name.lower() or name not in names:
        raise ApiError(404, N_("no button '{name}' (buttons: {names})"), name=name, names=", ".join(names))
    with _press_lock:
        try:
            seen = (box.press if how == "press" else box.hold)(name)
        except KeyError:
            raise ApiError(404, N_("no button '{name}' (buttons: {names})"), name=name,
                           names=", ".join(names)) from None
        except (RuntimeError, TimeoutError) as exc:     # a stuck or stopped box
            log.error("button %s %s failed: %s", name, how, exc)
            raise ApiError(503, N_("the box did not handle the button (see the companion's log)")) from None
        version = int(getattr(box, "frame_version", 0) or 0)
    response = jsonify(button=name, how=how, handled=seen is not False, frame_version=version)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/oled.png")
def oled():
    c = companion()
    box = _box(c)
    scale = request.args.get("scale", "4")
    if not (scale.isascii() and scale.isdigit()) or not 1 <= int(scale) <= 8:   # "²".isdigit()
        raise ApiError(400, N_("'scale' must be a whole number from 1 to 8"))
    png = box.frame_png(scale=int(scale))
    return Response(png, mimetype="image/png", headers={"Cache-Control": "no-store"})


def _qr_svg(url: str) -> str:
    """The join QR as inline SVG (segno; error level M like the OLED's)."""
    try:
        import segno

        return segno.make(url, error="m").svg_inline(scale=5, border=2, dark="#000", light="#fff")
    except Exception:           # no QR is no reason to lose the page
        return ""
