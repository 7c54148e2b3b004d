"""Optional outputs: one LED per seat, and a buzzer.  Absent by default.

``leds`` (a list of BCM pins, seat order): a seat's LED is lit while its
secret entry is locked, so the table sees who is still choosing, and once
its turn-clock bank has run out.
``buzzer`` (a BCM pin, an *active* buzzer driven by gpiozero ``Buzzer``):
one chirp at a reveal, two at the end of a round, three when a turn-clock
bank runs out.

A missing or failing output is logged and skipped; it never stops the box.
"""

from __future__ import annotations

import logging

log = logging.getLogger("hardware.outputs")

CHIRP_ON_S, CHIRP_OFF_S = 0.05, 0.08


class Outputs:
    def __init__(self, config: dict, factory, strict: bool = False):
        from gpiozero import LED, Buzzer

        self.leds: list = []
        self.buzzer = None
        self._lit: frozenset[int] = frozenset()
        try:
            for pin in config.get("leds") or []:
                # None: a seat whose LED is refused (on a board's pin: hardware/boards.py)
                self.leds.append(None if pin is None else LED(pin, pin_factory=factory))
            if config.get("buzzer") is not None:
                self.buzzer = Buzzer(config["buzzer"], pin_factory=factory)
        except Exception as exc:
            if strict:
                self.close()
                raise
            log.error("LEDs/buzzer unavailable: %s", exc)

    def show_locked(self, seats) -> None:
        """Light exactly the LEDs of ``seats``."""
        seats = frozenset(seats)
        if seats == self._lit:
            return
        self._lit = seats
        for seat, led in enumerate(self.leds):
            if led is None:
                continue
            try:
                led.value = seat in seats
            except Exception as exc:  # a dead LED must not stop the screen
                log.debug("LED %s: %s", seat, exc)

    def chirp(self, times: int = 1) -> None:
        if self.buzzer is None:
            return
        try:
            self.buzzer.beep(on_time=CHIRP_ON_S, off_time=CHIRP_OFF_S, n=times, background=True)
        except Exception as exc:
            log.debug("buzzer: %s", exc)

    def close(self) -> None:
        self.show_locked(())                 # do not leave a seat's LED lit
        for device in [*self.leds, self.buzzer]:
            if device is not None:
                try:
                    device.close()
                except Exception:
                    log.exception("closing an output failed")
        self.leds, self.buzzer = [], None
