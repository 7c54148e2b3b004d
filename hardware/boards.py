"""The boards a box can be: what each one's panel is, what its keys are, which pins it takes.

A board is a declaration, like a game (``companion/games/base.py``): data
that the box reads, never code that a board runs.  Three are known:

* ``wired`` — a panel and four buttons wired as wiring.md shows; its
  buttons and its panel come from the settings (``[buttons]``,
  ``[display]``), so every wired box keeps what it had;
* ``adafruit-oled-bonnet`` — Adafruit's 128x64 OLED Bonnet: an SSD1306 on
  I²C at 0x3C, a 5-way joystick and two buttons A and B;
* ``waveshare-oled-hat`` — Waveshare's 1.3inch OLED HAT: an SH1106 on
  4-wire SPI (its factory setting; CE0, DC on BCM 24, reset on BCM 25), a
  5-way joystick and three keys KEY1-KEY3.

Each board maps its controls onto the box's four keys (UP, DOWN, OK,
BACK).  On both plug-on boards the joystick's up, down and press are UP,
DOWN and OK; the Bonnet's A is OK and B is BACK; the Waveshare's KEY1 is
OK and KEY3 is BACK (KEY2, between them, does nothing, so that OK and
BACK are never a slip of the thumb apart).  The joystick's left and right
do nothing: a thumb aiming at up, down or press easily rocks it sideways,
and a stray OK or BACK would lock a secret card or leave a screen the
player did not mean to.  Holding BACK undoes, as on a wired box.

Every pin a board takes (its panel's bus, DC and reset, every control,
pins it routes for another mode) is listed: an LED or a buzzer set on one
of them is refused (:func:`refused_outputs`) and never driven.

Which board: the ``board`` setting (``board = "ID"`` in companion.toml,
``COMPANION_BOARD``, ``companion run --board ID``).  Without one the box
finds it (:func:`resolve`, :func:`auto_candidates`): see wiring.md,
"Which board".  The pinouts are the vendors' own (wiring.md cites them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from companion.i18n import N_, Later

KEYS = ("up", "down", "ok", "back")
I2C_PINS = (2, 3)                   # SDA1, SCL1
SPI0_PINS = (8, 9, 10, 11)          # CE0, MISO, MOSI, SCLK (the kernel's spi0 claims them all)


class BoardError(ValueError):
    """An unknown board, or a board setting that cannot work; one line a person can act on."""


@dataclass(frozen=True)
class Control:
    """One key, button or joystick direction: its BCM pin, its name on the
    box (an input of hardware/buttons.py), the label a person sees, and the
    box's key it acts as (None: it does nothing)."""

    pin: object                  # a BCM number, or a gpiozero pin name ("BOARD15") on a wired box
    name: str
    label: str
    key: str | None


@dataclass(frozen=True)
class Panel:
    """The OLED: its controller and how it is reached."""

    driver: str                  # "ssd1306" or "sh1106"
    bus: str                     # "i2c" or "spi"
    port: int = 1                # /dev/i2c-<port>, or the SPI bus /dev/spidev<port>.<device>
    address: int = 0x3C          # I²C only
    device: int = 0              # SPI only: the chip select (0: CE0)
    dc: int | None = None        # SPI only: data/command, BCM
    reset: int | None = None     # its reset line, BCM (None: none, or not on a GPIO)
    rotate: int = 0              # 0, or 2 when the board's panel sits upside down for luma

    def settings(self) -> dict:
        """As the ``[display]`` section reads (hardware/display.py)."""
        out = {"driver": self.driver, "bus": self.bus, "port": self.port, "rotate": self.rotate}
        if self.bus == "i2c":
            out["address"] = self.address
        else:
            out.update(device=self.device, dc=self.dc, reset=self.reset)
        return out


@dataclass(frozen=True)
class Board:
    id: str
    name: str                    # N_(): translated where it is shown
    panel: Panel
    controls: tuple[Control, ...]
    pins: frozenset              # every pin the board takes (BCM numbers)
    source: str = ""             # the vendor's document
    # What each pin is, for a refusal's message ("its A button").
    roles: dict = field(default_factory=dict, compare=False)
    # The drawing (the mock's /dev page, wiring.md): the side keys, top to
    # bottom, right of the panel; the joystick's five left of it.
    side: tuple = ()

    def drawing(self) -> dict:
        """The board's controls as a person sees them: ``joystick``
        (direction -> Control), ``side`` (top to bottom), ``row`` (a
        wired box's buttons, in a row under the panel)."""
        by_name = {c.name: c for c in self.controls}
        joystick = {name[4:]: by_name[name] for name in ("joy-up", "joy-down", "joy-left", "joy-right",
                                                          "joy-press") if name in by_name}
        side = [by_name[name] for name in self.side if name in by_name]
        shown = {c.name for c in (*joystick.values(), *side)}
        return {"joystick": joystick, "side": side, "row": [c for c in self.controls if c.name not in shown]}

    @property
    def keys(self) -> list[str]:
        """The box's keys this board has, UP, DOWN, OK, BACK first."""
        named = {c.key for c in self.controls if c.key}
        return [k for k in KEYS if k in named] + sorted(named - set(KEYS))

    def primary(self, key: str) -> Control:
        """The first control acting as ``key`` (the mock's ``press("ok")``)."""
        for control in self.controls:
            if control.key == key:
                return control
        raise KeyError(key)

    def control_at(self, pin: int) -> Control:
        for control in self.controls:
            if control.pin == pin:
                return control
        raise KeyError(pin)

    def role(self, pin) -> str:
        return self.roles.get(pin, N_("one of its pins"))


def _roles(panel: Panel, controls, extra: dict | None = None) -> dict:
    roles = {}
    if panel.bus == "i2c":
        roles.update({2: N_("its panel's I²C data (SDA)"), 3: N_("its panel's I²C clock (SCL)")})
    else:
        roles.update({8: N_("its panel's chip select (CE0)"), 9: N_("the SPI bus (MISO)"),
                      10: N_("its panel's SPI data (MOSI)"), 11: N_("its panel's SPI clock (SCLK)")})
        if panel.dc is not None:
            roles[panel.dc] = N_("its panel's data/command line (DC)")
    if panel.reset is not None:
        roles[panel.reset] = N_("its panel's reset line")
    for control in controls:
        roles[control.pin] = CONTROL_ROLES.get(control.label, N_("one of its keys"))
    roles.update(extra or {})
    return roles


CONTROL_ROLES = {
    "UP": N_("its UP key"), "DOWN": N_("its DOWN key"), "OK": N_("its OK key"), "BACK": N_("its BACK key"),
    "joystick up": N_("its joystick's up"), "joystick down": N_("its joystick's down"),
    "joystick left": N_("its joystick's left"), "joystick right": N_("its joystick's right"),
    "joystick press": N_("its joystick's press"),
    "A": N_("its A button"), "B": N_("its B button"),
    "KEY1": N_("its KEY1"), "KEY2": N_("its KEY2"), "KEY3": N_("its KEY3"),
}


def _board(id: str, name: str, panel: Panel, controls: list[Control], source: str,
           routed: dict | None = None, side: tuple = ()) -> Board:
    pins = set(I2C_PINS if panel.bus == "i2c" else SPI0_PINS)
    pins.update(p for p in (panel.dc, panel.reset) if p is not None)
    pins.update(c.pin for c in controls)
    pins.update(routed or {})
    return Board(id, name, panel, tuple(controls), frozenset(pins), source, _roles(panel, controls, routed),
                 tuple(side))


# Adafruit's guide, "Usage", and the board's own schematic: the joystick
# (a 5-way switch to GND) on BCM 17 up, 22 down, 27 left, 23 right, 4
# press; #5 (A) and #6 (B) to GND; the SSD1306's DC/SA0 tied to GND
# (address 0x3C) and its reset held by a supervisor chip, on no GPIO.
BONNET = _board(
    "adafruit-oled-bonnet", N_("Adafruit 128x64 OLED Bonnet"),
    Panel("ssd1306", "i2c", port=1, address=0x3C),
    [Control(17, "joy-up", "joystick up", "up"),
     Control(22, "joy-down", "joystick down", "down"),
     Control(4, "joy-press", "joystick press", "ok"),
     Control(5, "a", "A", "ok"),
     Control(6, "b", "B", "back"),
     Control(27, "joy-left", "joystick left", None),
     Control(23, "joy-right", "joystick right", None)],
    "https://learn.adafruit.com/adafruit-128x64-oled-bonnet-for-raspberry-pi",
    side=("b", "a"))                     # #6 (B) above and right of #5 (A), as on the board

# Waveshare's wiki and user manual (PIN CONFIGURATION): KEY1 P21, KEY2
# P20, KEY3 P16; joystick up P6, down P19, left P5, right P26, press P13;
# SPI on SCLK (P11), MOSI (P10), CS on CE0 (P8), DC P24, RST P25; the I²C
# option's SDA/SCL (P2/P3) are routed too.  4-wire SPI is its factory
# setting.  Its panel sits upside down for luma's set-up (programs
# published for this HAT turn it, or swap the joystick's directions).
WAVESHARE = _board(
    "waveshare-oled-hat", N_("Waveshare 1.3inch OLED HAT"),
    Panel("sh1106", "spi", port=0, device=0, dc=24, reset=25, rotate=2),
    [Control(6, "joy-up", "joystick up", "up"),
     Control(19, "joy-down", "joystick down", "down"),
     Control(13, "joy-press", "joystick press", "ok"),
     Control(21, "key1", "KEY1", "ok"),
     Control(16, "key3", "KEY3", "back"),
     Control(20, "key2", "KEY2", None),
     Control(5, "joy-left", "joystick left", None),
     Control(26, "joy-right", "joystick right", None)],
    "https://www.waveshare.com/wiki/1.3inch_OLED_HAT",
    routed={2: N_("its panel's I²C option (SDA)"), 3: N_("its panel's I²C option (SCL)")},
    side=("key1", "key2", "key3"))

PLUG_ON = {b.id: b for b in (BONNET, WAVESHARE)}
IDS = ("wired", *PLUG_ON)
NAMES = {"wired": N_("Wired (wiring.md)"), **{b.id: b.name for b in PLUG_ON.values()}}
AUTO = "auto"          # no setting: the box finds its board at each start


def wired(config: dict) -> Board:
    """The wired box: the ``[buttons]`` and ``[display]`` settings (wiring.md)."""
    from .buttons import button_names          # (standard library only)

    pins = {str(k).lower(): v for k, v in (config.get("buttons") or {}).items()}
    display = dict(config.get("display") or {})
    controls = [Control(pins[name], name, name.upper(), name if name in KEYS else name)
                for name in button_names(config)]
    address = display.get("address", 0x3C)
    try:
        address = int(address, 0) if isinstance(address, str) else int(address)
        port = int(display.get("port", 1))
        rotate = int(display.get("rotate", 0))
    except (TypeError, ValueError):
        address, port, rotate = 0x3C, 1, 0     # display.settings() says what is wrong
    panel = Panel(str(display.get("driver", "ssd1306")).lower(), "i2c", port=port, address=address,
                  rotate=rotate)
    return _board("wired", NAMES["wired"], panel, controls, "wiring.md")


def setting(config: dict) -> str:
    """The ``board`` setting, checked: one of :data:`IDS`, or ``auto`` when unset."""
    value = config.get("board")
    if value is None or str(value).strip() == "":
        return AUTO
    value = str(value).strip().lower()
    if value != AUTO and value not in IDS:
        raise BoardError(f"unknown board {value!r} (use one of: {', '.join(IDS)})")
    return value


def own_pins(config: dict) -> bool:
    """Do the settings name pins of their own (buttons moved, LEDs, a
    buzzer, another panel: an SH1106, another address)?  Then a person
    wired this box: it is ``wired``, as before boards existed."""
    from companion.config import DEFAULTS

    buttons = {str(k).lower(): v for k, v in (config.get("buttons") or {}).items()}
    display = config.get("display") or {}
    panel_moved = any(k in display and display[k] != v for k, v in DEFAULTS["display"].items())
    return (bool(config.get("leds")) or config.get("buzzer") is not None or buttons != DEFAULTS["buttons"]
            or panel_moved)


def resolve(config: dict) -> Board | None:
    """The board the settings name; None for ``auto`` (found at the start,
    :func:`auto_candidates`).  A box whose settings name its own pins is
    ``wired`` without one.  BoardError for an unknown board."""
    chosen = setting(config)
    if chosen == "wired" or (chosen == AUTO and own_pins(config)):
        return wired(config)
    if chosen == AUTO:
        return None
    board = PLUG_ON[chosen]
    rotate = (config.get("display") or {}).get("rotate")
    if rotate is not None and int(rotate) != board.panel.rotate:       # a panel mounted the other way
        from dataclasses import replace

        board = replace(board, panel=replace(board.panel, rotate=int(rotate)))
    return board


def auto_candidates(config: dict, i2c_answers: bool) -> list[Board]:
    """Without a board setting, what may be there, most likely first.

    An I²C panel answers at its address: a wired box or the Bonnet (both
    SSD1306s at 0x3C) — the wired box's keys, until a press on a pin only
    the Bonnet has (its joystick's press, A or B) tells the box it is a
    Bonnet.  No I²C panel answers: the Waveshare HAT's SPI panel, which
    cannot answer (SPI has no acknowledge), is drawn on; its pins (CE0,
    MOSI, SCLK, BCM 24 and 25) are none that wiring.md uses, so a wired
    box whose panel is loose loses nothing, and it keeps its own buttons
    too: they are claimed with the HAT's (no pin of the two is shared)."""
    board = wired(config)
    return [board, BONNET] if i2c_answers else [WAVESHARE, board]


@dataclass
class Keymap:
    """The controls the box claims and what each does, for one start.

    ``controls``: every input claimed (name -> Control); ``boards``: the
    candidates, the first the one believed; :meth:`tell` lets a press on a
    pin only a later candidate has make that candidate the board."""

    boards: list[Board]
    controls: dict = field(default_factory=dict)
    decided: bool = True

    @classmethod
    def of(cls, boards: list[Board]) -> Keymap:
        controls: dict[str, Control] = {}
        taken: set = set()
        for board in boards:
            for control in board.controls:
                if control.pin in taken:
                    continue                    # the believed board's use of the pin wins
                taken.add(control.pin)
                controls[control.name] = control
        return cls(list(boards), controls, decided=len(boards) == 1)

    @property
    def board(self) -> Board:
        return self.boards[0]

    def key(self, name: str) -> str | None:
        """What the input ``name`` does now."""
        control = self.controls[name]
        for candidate in self.boards[:1]:
            for own in candidate.controls:
                if own.pin == control.pin:
                    return own.key
        return control.key

    def holdable(self) -> frozenset:
        return frozenset(name for name in self.controls if self.key(name) == "back")

    def tell(self, name: str) -> Board | None:
        """A press of input ``name``: if only a candidate other than the
        believed one has that pin, it is the board now (returned)."""
        if self.decided:
            return None
        pin = self.controls[name].pin
        having = [b for b in self.boards if pin in {c.pin for c in b.controls}]
        if len(having) == 1 and having[0] is not self.boards[0]:
            self.boards.remove(having[0])
            self.boards.insert(0, having[0])
            self.decided = True
            return having[0]
        return None

    def keys(self) -> list[str]:
        """The box's keys (for the mock's /dev/buttons/<key>)."""
        return self.board.keys

    def primary(self, key: str) -> str:
        """The input a mock press of ``key`` drives (the believed board's first)."""
        control = self.board.primary(key)
        return next(name for name, c in self.controls.items() if c.pin == control.pin)

    def by_pin(self, pin: int) -> str:
        for name, control in self.controls.items():
            if control.pin == pin:
                return name
        raise KeyError(pin)


def refused_outputs(config: dict, board: Board) -> tuple[dict, list]:
    """The LEDs and buzzer the board leaves free, and the refused ones.

    Returns ``(outputs, refused)``: ``outputs`` is ``{"leds": [...],
    "buzzer": pin or None}`` with every output on one of the board's pins
    taken out (an LED keeps its seat's place as None), and ``refused`` the
    parts of the message, one :class:`~companion.i18n.Later` each."""
    leds, refused = [], []
    for seat, pin in enumerate(config.get("leds") or []):
        if _bcm(pin) in board.pins:
            refused.append(Later(REFUSED_ONE, what=Later(N_("seat {n}'s LED"), n=seat + 1), pin=_bcm(pin),
                                 role=Later(board.role(_bcm(pin)))))
            leds.append(None)
        else:
            leds.append(pin)
    buzzer = config.get("buzzer")
    if buzzer is not None and _bcm(buzzer) in board.pins:
        refused.append(Later(REFUSED_ONE, what=Later(N_("the buzzer")), pin=_bcm(buzzer),
                             role=Later(board.role(_bcm(buzzer)))))
        buzzer = None
    return {"leds": leds, "buzzer": buzzer}, refused


def _bcm(pin):
    """A pin setting as a BCM number where it is one ("GPIO5", "BCM5", 5); else as given."""
    if isinstance(pin, str):
        text = pin.strip().upper()
        for prefix in ("GPIO", "BCM"):
            if text.startswith(prefix) and text[len(prefix):].isdigit():
                return int(text[len(prefix):])
        if text.isdigit():
            return int(text)
        if text.startswith("BOARD") and text[5:].isdigit():
            return BOARD_TO_BCM.get(int(text[5:]), pin)
    return pin


# The 40-pin header's physical positions of the GPIOs (gpiozero's "BOARDn").
BOARD_TO_BCM = {3: 2, 5: 3, 7: 4, 8: 14, 10: 15, 11: 17, 12: 18, 13: 27, 15: 22, 16: 23, 18: 24, 19: 10,
                21: 9, 22: 25, 23: 11, 24: 8, 26: 7, 27: 0, 28: 1, 29: 5, 31: 6, 32: 12, 33: 13, 35: 19,
                36: 16, 37: 26, 38: 20, 40: 21}

# Told to the table (panel and phones) when outputs are refused.
REFUSED = N_("Not driven, as they are on pins of the {board}: {outputs}. Move them to free pins "
             "(wiring.md) or take them out of the settings; the box goes on without them.")
REFUSED_ONE = N_("{what} on GPIO {pin} ({role})")


def refusal_notice(board: Board, refused: list) -> tuple[str, dict] | None:
    """The notice for refused outputs, translated where it is shown."""
    if not refused:
        return None
    return (REFUSED, {"board": Later(board.name), "outputs": tuple(refused)})
