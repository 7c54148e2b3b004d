"""Joining the box's own app to its hub: the feeder and ``GET /api/hub``.

Called by the composition root (``companion run``, see appliance/runner.py)
once the box's session and app exist.  ``GET /api/hub`` answers on every box:
``{"configured": false}`` when no hub is set, else the feeder's status
(reachable, games and lines behind, a tournament seating on offer).

The box's screen gets the feeder too (``App.hub``): its Menu → Hub screen,
the idle screen's hub line and the tournament offer read the feeder's last
stored status, never the network.
"""

from __future__ import annotations

import logging

from flask import jsonify


log = logging.getLogger("companion.hub.feeder")


def attach(app, store, session, config: dict):
    """Start the feeder if the box is joined to a hub; add ``GET /api/hub``;
    return the function that stops the feeder."""
    try:
        feeder = None
        # The feeder's module (urllib, the exports) only on a box joined to
        # a hub: most tables have none, and every start would pay the import.
        if config.get("hub_url") and config.get("hub_key"):
            from .feeder import from_config

            feeder = from_config(config, store, session)
    except Exception as exc:      # a bad URL or an unreadable store: the table still runs
        log.error("not feeding the hub: %s", exc)
        feeder = None

    def hub_status():
        if feeder is None:
            return jsonify({"configured": False})
        return jsonify({"configured": True, **feeder.status()})

    app.add_url_rule("/api/hub", "hub_status", hub_status, methods=["GET"])
    if feeder is not None:
        log.info("feeding the hub at %s", feeder.url)
        show_on_box(app.extensions["companion"].box, feeder)
    return feeder.stop if feeder is not None else (lambda: None)


def show_on_box(box, feeder) -> None:
    """Hand ``feeder`` to the box's screens (no box: nothing to do).  The box
    takes it up on its own thread, also when its screens come after serving
    (``pins_later``), and then looks at the feeder's status every few
    seconds (see hardware/ui/hub.py)."""
    if box is None:
        return
    box.show_hub(feeder)
    try:
        box.flush()                # taken up before this returns, when the box answers
    except Exception as exc:       # a box that does not answer: it takes the hub up when it does
        log.warning("the box did not take up the hub yet: %s", exc)
