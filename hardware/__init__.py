"""The box: a Raspberry Pi's buttons and 128x64 OLED around the table session.

    from hardware import Box
    box = Box(session, config, mock=True)   # builds pins and screen; never raises for a missing display
    box.start(); box.press("ok"); png = box.frame_png(2); box.close()

See ``hardware/box.py`` for the threading, ``hardware/ui/`` for the screens
(one controller per game) and ``wiring.md`` for the parts and pins.
"""

from .box import Box, Frame

__all__ = ["Box", "Frame"]
