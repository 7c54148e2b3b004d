"""The club hub: a server that a club's boxes feed (PostgreSQL), with one
league, live tables on a big screen and Swiss tournaments.  See docs/hub.md.

``hub.feeder`` is the box's side (standard library only); everything else
runs on the hub's machine and needs the ``hub`` extra (psycopg, openskill).
"""
