"""The OLED's I2C traffic: bytes actually sent per frame, and what they cost on the wire.

    .venv/bin/python -m bench --only bench_i2c
    .venv/bin/python -m bench.bench_i2c          # this suite alone, as JSON

The box runs on mock pins with luma's real ``ssd1306`` driver (the box's
subclass that sends only what changed) over :class:`hardware.i2c_panel.EmulatedPanel`,
which counts every SMBus block.  For typical frames (the first full frame, a
cursor move in the menu, opening the menu, a Third Man reveal, a full redraw
as after a bus error) it reports the
blocks and bytes sent and the transfer time they mean at 100 kHz (the Pi's
default) and 400 kHz (what ``systemd/install.sh`` sets).

Wire time: each block is a start condition, the address byte, the control
byte (commands or data) and its payload, each byte 9 bits (8 + ack), and a
stop: ``2 + 9 * (2 + payload)`` bit times.  luma sends at most 32 bytes a
block through a plain SMBus object, as here; through smbus2 on a Pi it sends
data in one ``i2c_rdwr`` message of up to 4096 bytes, a little less overhead.

Baseline measured in the same run: the same frames through luma's stock
``ssd1306`` class, which sends the whole 1024-byte frame every time.  Also:
the CPU time of one ``display()`` call, the box's driver beside luma's.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time

def wire_ms(blocks: int, nbytes: int, hz: int) -> float:
    """Milliseconds on the bus for ``blocks`` SMBus writes carrying ``nbytes``
    (control bytes included): start + address + bytes, 9 bits each, + stop."""
    bits = 2 * blocks + 9 * (blocks + nbytes)
    return round(bits / hz * 1000, 2)


def _traffic(before: dict, after: dict) -> dict:
    blocks, nbytes = after["blocks"] - before["blocks"], after["bytes"] - before["bytes"]
    return {"blocks": blocks, "bytes": nbytes, "data_bytes": after["data"] - before["data"],
            "ms_100kHz": wire_ms(blocks, nbytes, 100_000), "ms_400kHz": wire_ms(blocks, nbytes, 400_000)}


def frames() -> dict:
    """The box through the emulated panel: traffic of each typical frame,
    with the stock driver's (full frames) beside it."""
    from gpiozero.pins.mock import MockFactory
    from luma.core.interface.serial import i2c
    from luma.oled.device import ssd1306

    from companion.session import TableSession
    from companion.store import Store
    from hardware import Box
    from hardware.display import make_device
    from hardware.i2c_panel import EmulatedPanel
    from hardware.testing import box_config

    panel = EmulatedPanel("ssd1306")
    stock_panel = EmulatedPanel("ssd1306")
    stock = ssd1306(i2c(bus=stock_panel, address=0x3C))
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"{tmp}/data")
        session = TableSession(store)
        factory = MockFactory()
        marks = {}

        def opener():
            marks["opened"] = panel.counters()
            return make_device("ssd1306", i2c(bus=panel, address=0x3C))
        box = Box(session, box_config(bounce_ms=1), mock=True, pin_factory=factory, display_factory=opener)
        try:
            box.start()

            def step(name, action):
                before, stock_before = panel.counters(), stock_panel.counters()
                action()
                stock.display(box.frame.image)
                out[name] = _traffic(before, panel.counters())
                out[name]["baseline_full_frame"] = _traffic(stock_before, stock_panel.counters())

            out["first_frame_with_setup"] = _traffic({k: 0 for k in panel.counters()}, panel.counters())
            step("open_menu", lambda: box.press("ok"))
            step("cursor_move", lambda: box.press("down"))
            step("cursor_move_back", lambda: box.press("up"))
            box.press("back")
            session.submit({"type": "new_game", "game": "third-man", "players": ["Ann", "Ben", "Chloé", "Dan"]})
            box.flush()
            session.submit({"type": "bid", "seat": 0, "card": 3})
            for seat, card in [(1, 1), (2, 9)]:
                session.submit({"type": "bid", "seat": seat, "card": card})
            box.flush()
            step("reveal", lambda: (session.submit({"type": "bid", "seat": 3, "card": 2}), box.flush()))
            # A full redraw: what a reopened panel gets (after a bus error), set-up not counted.
            fresh_panel = EmulatedPanel("ssd1306")
            fresh = make_device("ssd1306", i2c(bus=fresh_panel, address=0x3C))
            before, stock_before = fresh_panel.counters(), stock_panel.counters()
            fresh.display(box.frame.image)
            stock.display(box.frame.image)
            out["full_redraw"] = _traffic(before, fresh_panel.counters())
            out["full_redraw"]["baseline_full_frame"] = _traffic(stock_before, stock_panel.counters())
        finally:
            box.close()
            factory.reset()
            store.close()
    return out


def display_cpu(samples: int) -> dict:
    """CPU time of one display() call on a bus that does nothing: the box's
    driver (diff) for alternating frames, beside luma's stock ssd1306."""
    from luma.core.interface.serial import i2c
    from luma.oled.device import ssd1306

    from hardware import draw
    from hardware.display import make_device

    class NullBus:
        def write_i2c_block_data(self, addr, mode, data):
            pass

    frames = []
    for i in range(2):
        c = draw.Canvas()
        c.header("Menu")
        for row in range(4):
            c.row(14 + row * 12, f"Row {row}", row == i)
        frames.append(c.image)
    result = {}
    for name, device in [("box_driver", make_device("ssd1306", i2c(bus=NullBus(), address=0x3C))),
                         ("baseline_luma_ssd1306", ssd1306(i2c(bus=NullBus(), address=0x3C)))]:
        times = []
        for k in range(samples):
            t0 = time.perf_counter()
            device.display(frames[k % 2])
            times.append(time.perf_counter() - t0)
        times.sort()
        result[name] = {"median_ms": round(statistics.median(times) * 1000, 3),
                        "p99_ms": round(times[int(0.99 * (len(times) - 1))] * 1000, 3)}
    return result


def run(quick: bool = False) -> dict:
    traffic = frames()
    for figures in traffic.values():
        if "baseline_full_frame" in figures:
            figures["share_of_full_frame"] = round(figures["bytes"] / figures["baseline_full_frame"]["bytes"], 3)
    return {"frames": traffic, "display_cpu": display_cpu(50 if quick else 400)}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
