"""appliance — the companion's life as a box, around the table.

The table itself (games, log, store, session, roster, history, statistics,
exports, the turn clock) is :mod:`companion`, the pure core; :mod:`hardware`
(the buttons and the panel) and :mod:`web` (the phones) are its adapters.
This package is everything that keeps the appliance alive:

* the one start sequence (:mod:`appliance.runner`) and the ``companion``
  command (:mod:`appliance.cli`);
* its releases, signed bundles, updates and rollback (:mod:`appliance.bundle`,
  :mod:`appliance.updates`), the new release's self-check, backups of the
  whole box (:mod:`appliance.backup`), set-up from a phone and the box's own
  Wi-Fi as the service sees them (:mod:`appliance.setup`, :mod:`appliance.wifi`),
  the settings file (:mod:`appliance.settings_file`; the durable write is
  the core's, :mod:`companion.durable`);
* :mod:`appliance.root`: what runs as root (the update installer, the Wi-Fi
  daemon, the set-up applier), which never loads Flask, PIL or the panel.

It imports the core; the core never imports it.  See docs/architecture.md.
"""

# The machines a box runs on, which a bundle is made for (appliance/release.py).
MACHINES = ("aarch64", "x86_64")
