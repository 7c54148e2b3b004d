"""The box: from a mock pin edge to the new frame handed to the display.

    .venv/bin/python -m bench --only bench_box
    .venv/bin/python -m bench.bench_box          # this suite alone, as JSON

Each sample drives a mock pin low (a press of UP or DOWN in the scoreboard's
list, which moves the cursor, so every press makes a new frame) and takes the
time until the box's worker calls ``display()`` on the panel (a luma dummy).
That covers the gpiozero callback, the queue hop to the worker thread, the
debounce, the screen logic, the drawing and the frame comparison.

Baseline measured in the same run: a bare gpiozero ``Button`` on a mock pin,
from ``drive_low()`` to its ``when_pressed`` callback.  Also reported: the
time to draw one frame, and the box's CPU use and worker wake-ups while idle
(there is no polling loop: the worker sleeps until something happens; what
remains is gpiozero's own hold threads).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time

TARGET_P99_MS = 15.0


def _ms(values: list[float]) -> dict:
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]
    return {"median_ms": round(statistics.median(values) * 1000, 3), "p99_ms": round(p99 * 1000, 3),
            "max_ms": round(values[-1] * 1000, 3), "samples": len(values)}


def bare_button(presses: int) -> dict:
    from gpiozero import Button
    from gpiozero.pins.mock import MockFactory

    factory = MockFactory()
    seen: list[float] = []
    button = Button(17, pull_up=True, bounce_time=None, pin_factory=factory)
    button.when_pressed = lambda: seen.append(time.perf_counter())
    pin = factory.pin(17)
    samples = []
    try:
        for _ in range(presses):
            t0 = time.perf_counter()
            pin.drive_low()
            samples.append(seen[-1] - t0)
            pin.drive_high()
    finally:
        button.close()
        factory.reset()
    return _ms(samples)


def box_latency(presses: int) -> dict:
    from gpiozero.pins.mock import MockFactory
    from luma.core.device import dummy

    from companion.session import TableSession
    from companion.store import Store
    from hardware import Box
    from hardware.testing import box_config

    handed = threading.Event()
    stamp = [0.0]

    class TimedDummy(dummy):
        def display(self, image):
            stamp[0] = time.perf_counter()       # the frame reaches the panel driver
            super().display(image)
            handed.set()

    with tempfile.TemporaryDirectory() as data:
        store = Store(data)
        session = TableSession(store)
        session.submit({"type": "new_game", "game": "scoreboard", "players": ["Ann", "Ben", "Chloé", "Dan"]})
        factory = MockFactory()
        config = box_config(bounce_ms=2)
        box = Box(session, config, mock=True, pin_factory=factory,
                  display_factory=lambda: TimedDummy(width=128, height=64, mode="1"))
        try:
            box.start()
            pins = {name: factory.pin(config["buttons"][name]) for name in ("up", "down")}
            samples = []
            for i in range(presses):
                pin = pins["down" if i % 2 == 0 else "up"]
                handed.clear()
                t0 = time.perf_counter()
                pin.drive_low()
                if not handed.wait(2):
                    raise RuntimeError("no frame reached the display")
                samples.append(stamp[0] - t0)
                pin.drive_high()
                box.flush()
                time.sleep(config["bounce_ms"] / 1000 + 0.0005)   # out of the debounce window
            render = list(box.render_times)
            time.sleep(0.05)
            wakeups, cpu0, wall0 = box.wakeups, time.process_time(), time.perf_counter()
            time.sleep(1.0)
            idle_cpu = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
            idle_wakeups = box.wakeups - wakeups
        finally:
            box.close()
            factory.reset()
            store.close()
    return {"edge_to_display": _ms(samples), "render": _ms(render),
            "idle_cpu_percent": round(idle_cpu * 100, 3), "idle_worker_wakeups_per_s": idle_wakeups}


def run(presses: int = 500, quick: bool = False) -> dict:
    if quick:
        presses = min(presses, 100)
    box = box_latency(presses)
    return {
        "edge_to_display_median_ms": box["edge_to_display"]["median_ms"],
        "edge_to_display_p99_ms": box["edge_to_display"]["p99_ms"],
        "edge_to_display_max_ms": box["edge_to_display"]["max_ms"],
        "target_p99_ms": TARGET_P99_MS,
        "frame_render_median_ms": box["render"]["median_ms"],
        "frame_render_p99_ms": box["render"]["p99_ms"],
        "baseline_bare_gpiozero_callback": bare_button(presses),
        "presses": presses,
        "idle_cpu_percent": box["idle_cpu_percent"],
        "idle_worker_wakeups_per_s": box["idle_worker_wakeups_per_s"],
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
