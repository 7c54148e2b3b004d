"""Helpers for testing the box without a Pi (used by tests/ and bench/).

* :class:`HeldAtPowerOn` — a mock pin whose button is already pressed when
  the box starts (its pull-up does not lift it), for the "held at power-on"
  case.
* :class:`FlakyDummy` — luma's dummy device that starts raising ``OSError``
  after a number of frames, like a panel whose wire came loose.
* :class:`VanishingPanel` — a panel that can vanish mid-frame (half a frame
  written, then an error) and come back as the same device.
* :class:`BrokenPins` — a pin factory whose pins cannot be had (the pin
  library failing at start).
* :class:`FrameLog` — every frame the box draws, in order.
* :func:`box_config` — the default settings with fast debounce and hold.
"""

from __future__ import annotations

import threading

from gpiozero.pins.mock import MockPin
from luma.core.device import dummy

from companion import config as cfg


class HeldAtPowerOn(MockPin):
    """A mock input held low by its button: setting the pull-up does not raise it."""

    def _set_pull(self, value):
        self._pull = value


class FlakyDummy(dummy):
    """A dummy 128x64 panel that fails with ``OSError`` once ``fail_after``
    frames have been shown (None: never), until ``healed``."""

    def __init__(self, fail_after=None, **kwargs):
        super().__init__(width=128, height=64, mode="1", **kwargs)
        self.fail_after = fail_after
        self.shown = 0

    def display(self, image):
        if self.fail_after is not None and self.shown >= self.fail_after:
            raise OSError(121, "Remote I/O error")
        self.shown += 1
        super().display(image)


class VanishingPanel(dummy):
    """A dummy 128x64 panel whose wire can come loose.

    While ``gone`` is set, :meth:`display` writes the top half of the frame
    and then raises ``error`` (``OSError(121)`` by default: what smbus
    raises for a device that stopped answering), leaving a torn picture;
    :meth:`opener` (the display factory) raises ``DeviceNotFoundError`` while
    it is gone and hands back this same panel once it is back.
    """

    def __init__(self, error: Exception | None = None, **kwargs):
        super().__init__(width=128, height=64, mode="1", **kwargs)
        self.gone = False
        self.error = error or OSError(121, "Remote I/O error")
        self.shown = 0          # whole frames shown
        self.torn = 0           # frames cut off half-way
        self.opened = 0

    def display(self, image):
        if self.gone:
            torn = self.image.copy() if self.image is not None else image.copy()
            torn.paste(image.crop((0, 0, 128, 32)), (0, 0))
            self.image = torn
            self.torn += 1
            raise self.error
        self.shown += 1
        super().display(image)

    def opener(self):
        from luma.core.error import DeviceNotFoundError

        if self.gone:
            raise DeviceNotFoundError("I2C device not found on address: 0x3C")
        self.opened += 1
        return self


class BrokenPins:
    """A gpiozero pin factory whose every pin request raises ``error`` (as
    when the pin library cannot work: not a Pi, no permission, a pin taken)."""

    def __init__(self, error: Exception):
        from gpiozero.pins.mock import MockFactory

        self.error = error
        self._factory = MockFactory()

    def __getattr__(self, name):
        return getattr(self._factory, name)

    def pin(self, spec, **kwargs):
        raise self.error

    def reserve_pins(self, requester, *pins):
        raise self.error

    def close(self):
        self._factory.close()


class FrameLog:
    """Collects every new frame of a box (subscribe with ``box.subscribe_frames(log)``)."""

    def __init__(self, box):
        self.box = box
        self.frames = []
        self._lock = threading.Lock()
        self.unsubscribe = box.subscribe_frames(self)

    def __call__(self, version):
        with self._lock:
            self.frames.append(self.box.frame)   # runs on the box's thread: this is that frame

    def mark(self) -> int:
        with self._lock:
            return len(self.frames)

    def since(self, mark: int):
        with self._lock:
            return list(self.frames[mark:])


def box_config(**overrides) -> dict:
    """The default settings with a 5 ms debounce and a 0.15 s long press."""
    config = {k: (dict(v) if isinstance(v, dict) else (list(v) if isinstance(v, list) else v))
              for k, v in cfg.DEFAULTS.items()}
    config.update({"bounce_ms": 5, "hold_s": 0.15})
    config.update(overrides)
    return config


