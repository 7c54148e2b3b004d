"""The captive portal of the box's own Wi-Fi (issue 23).

When the box runs its own network (appliance/root/wifi.py: ``wifi.json`` says
"own"), its DNS answers every name with the box and port 80 on the radio
leads here.  A phone that joins asks a well-known address whether the
network reaches the internet; any answer other than the expected one makes
its system open a "sign in" window on what it got.  We answer with a
redirect to the scoreboard, so the phone shows the table by itself:

    GET /generate_204, /gen_204            Android, Chrome OS
    GET /hotspot-detect.html,
        /library/test/success.html         Apple
    GET /connecttest.txt, /ncsi.txt,
        /redirect                          Windows
    GET /canonical.html, /success.txt      Firefox

All answer ``302`` to the box's own address, whatever the ``Host``: the
redirect holds nothing but that public address, the same in every world
(no secret, no PIN), and a page on another site reading it learns nothing
it could not see on the box's screen.  Any other path asked by a foreign
name is refused as web/hosts.py says (400), except while the box runs its
own network: then a name typed by hand (``example.com``) is redirected to the
scoreboard too, since every name is the box there.  docs/security.md has
the rows.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, request
from markupsafe import escape

from appliance import setup, wifi

from .hosts import split_host

bp = Blueprint("portal", __name__)

PROBES = ("/generate_204", "/gen_204", "/hotspot-detect.html", "/library/test/success.html",
          "/connecttest.txt", "/ncsi.txt", "/redirect", "/canonical.html", "/success.txt")


def own_network(config: dict) -> wifi.Status | None:
    """The box's own network, when it runs one (read from the data folder)."""
    return wifi.own_status(config.get("data_dir"))


def scoreboard_url(config: dict, status: wifi.Status | None) -> str:
    """The box's address on its own network (phones there know no other),
    else the URL it shows, else its root."""
    url = config.get("url") or ""
    if status is not None:
        port = urlsplit(url).port if url else None
        port = port or int(config.get("port") or 8000)
        url = f"http://{status.address}:{port}/" if port != 80 else f"http://{status.address}/"
        # A box with no settings yet: the phone lands on its Setup page.
        return url + "setup" if setup.in_setup_mode(config.get("data_dir")) else url
    return url or "/"


def _redirect(target: str) -> Response:
    link = escape(target)
    response = Response(f'<!doctype html><a href="{link}">{link}</a>\n', status=302,
                        mimetype="text/html")
    response.headers["Location"] = target
    # Never cached: the next probe must ask again (the phone may have moved on).
    response.headers["Cache-Control"] = "no-store"
    return response


def is_probe(path: str) -> bool:
    return path in PROBES


ALLOW = "allow"


def answer_foreign(config: dict, host: str | None) -> Response | str | None:
    """For a request whose ``Host`` is not one the box knew: :data:`ALLOW`
    when it is the box's address on its own network (just raised: the list
    of the box's addresses in web/hosts.py may not have it yet), the
    portal's redirect (a probe, or any GET while the box runs its own
    network), or None (then the request is refused as before)."""
    status = own_network(config)
    if status is not None and host is not None and split_host(host) == status.address:
        return ALLOW
    if request.method not in ("GET", "HEAD"):
        return None
    if is_probe(request.path) or status is not None:
        return _redirect(scoreboard_url(config, status))
    return None


def _probe():
    config = current_app.extensions["companion"].config
    return _redirect(scoreboard_url(config, own_network(config)))


for _path in PROBES:
    bp.add_url_rule(_path, endpoint="probe" + _path.replace("/", "_").replace(".", "_"),
                    view_func=_probe, methods=["GET"])


@bp.app_context_processor
def _own_wifi():
    """``own_wifi`` in every page: the box's network (name only) while it runs one."""
    try:
        status = own_network(current_app.extensions["companion"].config)
    except Exception:
        status = None
    return {"own_wifi": status.ssid if status is not None else None}
