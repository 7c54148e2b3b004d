"""What runs as root: the update installer, the box's own Wi-Fi, the set-up applier.

Each is started by a unit of its own (``companion update --worker``,
``companion wifi``, ``companion setup-apply``) and imports only the core and
the service-side modules of :mod:`appliance` — never :mod:`hardware` (PIL,
the panel) or :mod:`web` (Flask).  tests/core/test_layers.py holds it to that.
"""
