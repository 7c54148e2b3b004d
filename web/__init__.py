"""The web side of the companion: the JSON API, live events, seats, the
mock box's /dev page, and the production server (:mod:`web.serve`).

    from web import create_app
    app = create_app(session, box=box, config=config, pin="1234")
"""

from .app import create_app

__all__ = ["create_app"]
