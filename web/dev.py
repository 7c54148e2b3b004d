"""The developer's window on the box (mock mode) and the OLED mirror.

    GET  /dev                          page: live OLED frame, virtual buttons, join QR + PIN (mock only)
    GET  /dev/frames                   event stream: one `frame` event per new panel frame (mock only)
    GET  /dev/oled.png                 the panel's own frame as PNG, secrets and PIN included (mock only)
    POST /dev/buttons/<name>/press     drive the mock pin: a short press (mock only)
    POST /dev/buttons/<name>/hold      a long press (mock only)
    POST /dev/pins/<bcm>/press         press the control on that BCM pin, as a finger on the box's
                                       board would (mock only; a key that does nothing included)
    POST /dev/pins/<bcm>/hold          a long press of it (mock only)
    GET  /oled.png                     the public mirror as PNG (mock and real box)

``/dev`` *is* the mock box: it shows what the box's holder sees (the PIN,
the cursor over a secret card), so it exists only in mock mode and answers
only to this computer (loopback), unless the operator opens it to the network
with ``companion run --mock --dev-anywhere``.  Its buttons also refuse
cross-site requests (``Sec-Fetch-Site``/``Origin`` of another site): a web
page opened on a phone on the Wi-Fi cannot press them.

``/oled.png`` is public: it shows the box's frame except while the screen is
private (a secret being chosen, the PIN), when it shows the box's public
stand-in ("Ben is choosing…"); see hardware/box.py.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from urllib.parse import urlsplit

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
    """The app, if this request may use /dev: mock mode, and a loopback
    client unless ``--dev-anywhere`` (config ``dev_anywhere``) opened it."""
    c = companion()
    if not c.mock:
        raise ApiError(404, N_("the /dev pages exist only in mock mode (companion run --mock)"))
    if not c.config.get("dev_anywhere") and not _loopback(request.remote_addr):
        raise ApiError(403, N_("the /dev pages answer only on the computer running the mock box "
                               "(start it with --dev-anywhere to open them to the network)"))
    return c


def _loopback(address) -> bool:
    try:
        ip = ipaddress.ip_address(str(address or ""))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def _same_site() -> None:
    """Refuse a request another site's page made the browser send.

    Browsers say where a request comes from: ``Sec-Fetch-Site`` (anything
    but ``same-origin`` or ``none``, i.e. typed or bookmarked, is another
    page's) and ``Origin`` (a form POST carries it; it must name this very
    host).  Clients that send neither (curl, tests) are not browsers at the
    mercy of another page."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        raise ApiError(403, N_("the mock box's buttons refuse requests from another site's page"))
    origin = request.headers.get("Origin")
    if origin is not None:
        try:
            parts = urlsplit(origin)
            netloc = parts.netloc if parts.scheme in ("http", "https") else None
        except ValueError:
            netloc = None
        if netloc is None or netloc.lower() != request.host.lower():
            raise ApiError(403, N_("the mock box's buttons refuse requests from another site's page"))


def _box(c):
    if c.box is None:
        raise ApiError(503, N_("no box is running (see the companion's log)"))
    return c.box


@bp.get("/dev")
def page():
    c = _mock_only()
    url = c.join_url(request.host_url)
    names = list(getattr(c.box, "button_names", []) or []) if c.box is not None else []
    board = getattr(c.box, "board", None)
    return render_template("dev.html", url=url, pin=c.pin, qr=_qr_svg(url), buttons=names,
                           has_box=c.box is not None, board=board,
                           drawing=board.drawing() if board is not None else None,
                           pins={c.key: c.pin for c in reversed(board.controls) if c.key} if board is not None else {})


@bp.get("/dev/frames")
def frames():
    c = _mock_only()
    _box(c)
    return open_stream(c.dev_frames)


@bp.get("/dev/oled.png")
def dev_oled():
    """The panel's own frame: what the box's holder sees, secrets included."""
    return _png(_box(_mock_only()), mirror=False)


@bp.post("/dev/buttons/<name>/<how>")
def button(name: str, how: str):
    c = _mock_only()
    _same_site()
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


@bp.post("/dev/pins/<bcm>/<how>")
def pin(bcm: str, how: str):
    """A finger on the board's control at BCM pin ``bcm`` (``press`` or ``hold``)."""
    c = _mock_only()
    _same_site()
    box = _box(c)
    if how not in ("press", "hold"):
        abort(404)
    board = getattr(box, "board", None)
    pins = sorted({ctl.pin for ctl in board.controls if isinstance(ctl.pin, int)}) if board is not None else []
    if not (bcm.isascii() and bcm.isdigit()) or int(bcm) not in pins:
        raise ApiError(404, N_("no control of this board on GPIO {bcm} (its controls: GPIO {pins})"),
                       bcm=bcm[:8], pins=", ".join(map(str, pins)))
    with _press_lock:
        try:
            seen = (box.press_pin if how == "press" else box.hold_pin)(int(bcm))
        except KeyError:
            raise ApiError(404, N_("no control of this board on GPIO {bcm} (its controls: GPIO {pins})"),
                           bcm=bcm, pins=", ".join(map(str, pins))) from None
        except (RuntimeError, TimeoutError) as exc:     # a stuck or stopped box
            log.error("pin %s %s failed: %s", bcm, how, exc)
            raise ApiError(503, N_("the box did not handle the button (see the companion's log)")) from None
        version = int(getattr(box, "frame_version", 0) or 0)
    control = board.control_at(int(bcm))
    response = jsonify(pin=int(bcm), how=how, control=control.label, key=control.key,
                       handled=seen is not False, frame_version=version)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/oled.png")
def oled():
    """The public mirror: never a secret being chosen, never the PIN."""
    return _png(_box(companion()), mirror=True)


def _png(box, mirror: bool) -> Response:
    scale = request.args.get("scale", "4")
    if not (scale.isascii() and scale.isdigit()) or not 1 <= int(scale) <= 8:     # "²" is a digit too
        raise ApiError(400, N_("'scale' must be a whole number from 1 to 8"))
    png = box.frame_png(scale=int(scale), mirror=mirror)
    return Response(png, mimetype="image/png", headers={"Cache-Control": "no-store"})


def _qr_svg(url: str) -> str:
    """The join QR as inline SVG (segno; error level M like the OLED's)."""
    try:
        import segno

        return segno.make(url, error="m").svg_inline(scale=5, border=2, dark="#000", light="#fff")
    except Exception:           # no QR is no reason to lose the page
        return ""
