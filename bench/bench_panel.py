"""Panel care: how long the OLED's pixels are lit, before and after.

The mock box runs on a fake clock through two scripts, each twice: with
panel care off as the box was before it (never dims, never sleeps, no
moving, luma's own SSD1306 contrast 0xCF), and with the defaults
(hardware/panel_care.py: dim after 10 min, sleep after 30, brightness
"medium", long-lived screens moved by a pixel every 3 min).

* **evening**: a phone starts a scoreboard for four; a phone adds points and
  the buttons move now and then for 2 h, a 40-minute break, 1.5 h more, then
  the table leaves the box on until 6 h in total;
* **idle day**: 24 h of the idle screen (the PIN), nobody touching.

Figures, per script and setting: the lit pixel-hours of the panel (pixels
lit x hours, while the panel is on); the same weighted by the contrast
(/255: what the panel's current, and its wear, follow); and the hours of
the most-lit single pixel (what burns in first).  The clock is stepped by
30 s; the frames are those the box really draws (``box.frame``).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

STEP_S = 30.0
BEFORE_CONTRAST = 0xCF        # luma.oled's ssd1306 sets this at start; the box never changed it


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _run(script, care_on: bool, hours: float) -> dict:
    from gpiozero.pins.mock import MockFactory

    from companion.session import TableSession
    from companion.store import Store
    from hardware import Box, panel_care
    from hardware.testing import box_config

    shift_s = panel_care.SHIFT_S
    if not care_on:
        panel_care.SHIFT_S = 1e9                  # no moving either
    folder = Path(tempfile.mkdtemp(prefix="bench-panel-"))
    store = Store(folder)
    session = TableSession(store)
    clock = Clock()
    config = box_config() if care_on else box_config(panel_dim_s=0, panel_sleep_s=0)
    box = Box(session, config, mock=True, pin_factory=MockFactory(), clock=clock)
    seen: Counter = Counter()
    try:
        box.start()
        box.show_join("http://companion.local:8000", "4821")
        box.flush()
        start = clock.now
        events = script(box, session)
        t = 0.0
        while t < hours * 3600:
            while events and events[0][0] <= t:
                events.pop(0)[1]()
            box.flush()
            contrast = box.care.contrast() if care_on else BEFORE_CONTRAST
            lit = box.care.lit
            seen[(box.frame.image.tobytes(), contrast if lit else 0)] += STEP_S
            t += STEP_S
            clock.now = start + t
    finally:
        box.close()
        store.close()
        panel_care.SHIFT_S = shift_s
    return _figures(seen)


def _figures(seen: Counter) -> dict:
    from PIL import Image

    per_pixel = [0.0] * (128 * 64)
    pixel_hours = weighted = 0.0
    for (data, contrast), seconds in seen.items():
        if not contrast:
            continue
        image = Image.frombytes("1", (128, 64), data)
        lit = list(image.getdata())
        n = sum(1 for v in lit if v)
        pixel_hours += n * seconds / 3600
        weighted += n * seconds / 3600 * contrast / 255
        for i, v in enumerate(lit):
            if v:
                per_pixel[i] += seconds / 3600
    return {"lit_pixel_hours": round(pixel_hours), "contrast_weighted_pixel_hours": round(weighted),
            "hottest_pixel_hours": round(max(per_pixel), 2)}


def evening(box, session):
    players = ["Marc-Antoine", "Éloïse", "Zoé", "Ingrid"]
    events = [(0, lambda: session.submit({"type": "new_game", "game": "scoreboard", "players": players}))]
    # Points every 5 min for 2 h; a 40-minute break; 1.5 h more.
    plays = list(range(300, 2 * 3600, 300)) + list(range(2 * 3600 + 2400, 2 * 3600 + 2400 + 5400, 300))
    for n, t in enumerate(plays):
        events.append((t, lambda n=n: session.submit({"type": "add", "seat": n % 4, "points": n % 7 + 1})))
        if n % 3 == 0:
            events.append((t + 60, lambda: box.press("down")))
    return sorted(events, key=lambda e: e[0])


def idle_day(box, session):
    return []


def run(quick: bool = False) -> dict:
    out = {}
    for name, script, hours in (("evening", evening, 6.0), ("idle_day", idle_day, 24.0)):
        if quick:
            hours /= 4
        before = _run(script, False, hours)
        after = _run(script, True, hours)
        out[name] = {"hours": hours, "before (baseline)": before, "after": after,
                     "after/before lit pixel-hours": round(after["lit_pixel_hours"] / max(1, before["lit_pixel_hours"]), 3),
                     "after/before contrast-weighted": round(after["contrast_weighted_pixel_hours"]
                                                             / max(1, before["contrast_weighted_pixel_hours"]), 3)}
    return out
