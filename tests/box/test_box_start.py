"""The appliance's start order: the panel first ("Starting…"), the pins later.

``companion run`` builds its box with ``pins_later=True`` and claims the
pins once serving (appliance/cli.py, web/serve.py): the panel must never
show a screen that invites a press before a pin can see it, and a press
asked for meanwhile (the mock box's /dev page) must act once the pins are up.
"""

from __future__ import annotations

import threading

from box_support import mock_factory, shows  # noqa: F401 (the fixture)
from hardware import Box
from hardware.testing import box_config


def test_the_panel_says_starting_until_the_pins_are_claimed(session, mock_factory):
    box = Box(session, box_config(), mock=True, pin_factory=mock_factory, pins_later=True)
    try:
        box.start()
        assert box.buttons is None and not box.pins_ready.is_set()
        shows(box, "Starting…")
        assert box.mirror.texts == box.frame.texts, "the web mirror shows the same"
        box.show_join("http://box.local:8080/", "1234")
        box.flush()
        shows(box, "Starting…")                       # still: the pins are not claimed
        box.attach_pins()
        assert box.pins_ready.wait(60)
        box.flush()
        assert box.buttons is not None
        assert "Starting…" not in " ".join(box.frame.texts)
        shows(box, "Game companion")
        box.press("ok")
        shows(box, "Menu")
        box.attach_pins()                             # once claimed: nothing more
        box.flush()
        shows(box, "Menu")
    finally:
        box.close()


def test_a_press_during_the_start_acts_once_the_pins_are_up(session, mock_factory):
    box = Box(session, box_config(), mock=True, pin_factory=mock_factory, pins_later=True)
    try:
        box.start()
        errors: list = []

        def press():
            try:
                box.press("ok")
            except Exception as exc:      # reported below, not lost in the thread
                errors.append(exc)

        presser = threading.Thread(target=press)
        presser.start()
        presser.join(0.2)
        assert presser.is_alive(), "the press waits for the pins"
        shows(box, "Starting…")
        box.attach_pins()
        presser.join(60)
        assert not presser.is_alive() and not errors, errors
        shows(box, "Menu")
    finally:
        box.close()


def test_a_box_built_with_its_pins_is_unchanged(session, mock_factory):
    box = Box(session, box_config(), mock=True, pin_factory=mock_factory)
    try:
        box.start()
        assert box.pins_ready.is_set() and box.buttons is not None
        shows(box, "Game companion")
        box.attach_pins()                             # a no-op: appliance.runner calls it on every box
        box.flush()
        shows(box, "Game companion")
    finally:
        box.close()


def test_the_first_frame_imports_nothing_the_web_or_the_network_needs(tmp_path):
    """What `companion run` loads before the panel's first frame: the store, the
    session and the box, nothing of the web side and no network client (the
    look-alike names' table once imported urllib, http, email and ssl there:
    about a second at a Pi Zero 2 W's pace)."""
    import subprocess
    import sys

    script = (
        "import os, sys; os.environ['GPIOZERO_PIN_FACTORY'] = 'mock'\n"
        "from pathlib import Path\n"
        "from companion.store import Store\n"
        "from companion.session import TableSession\n"
        "import hardware\n"
        f"store = Store(Path({str(tmp_path)!r}))\n"
        "session = TableSession(store)\n"
        "box = hardware.Box(session, {}, mock=True, pins_later=True)\n"
        "box.start()\n"
        "print(' '.join(sorted(m for m in ('flask', 'werkzeug', 'waitress', 'urllib.request', 'http.client',\n"
        "                                  'email', 'ssl', 'gpiozero') if m in sys.modules)))\n"
        "box.close(); store.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []
