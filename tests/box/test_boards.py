"""The boards (hardware/boards.py) on gpiozero's mock pins, driven by BCM number.

Each board runs a whole key sequence as a finger on it would press it: the
menu opened, moved and closed, five points to Ben, then a hold of BACK and
the undo.  The plug-on boards' extra controls do what wiring.md says (the
Bonnet's A is a second OK, the Waveshare's KEY1 too; the joysticks' left
and right, the Waveshare's KEY2, nothing); LEDs and a buzzer on a board's
pins are refused, said on the panel and the phones, and never driven; a box
with no board set finds one.
"""

from __future__ import annotations

import pytest

from companion import config as cfg
from companion.i18n import gettext
from hardware import Box, boards
from hardware.testing import box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]

# What a finger presses on each board for UP, DOWN, OK, BACK (the vendors' pinouts, wiring.md).
FINGERS = {
    "wired": {"up": 17, "down": 27, "ok": 22, "back": 23},
    "adafruit-oled-bonnet": {"up": 17, "down": 22, "ok": 4, "back": 6},
    "waveshare-oled-hat": {"up": 6, "down": 19, "ok": 13, "back": 16},
}


def drawn(box) -> str:
    return " | ".join(box.frame.texts)


def keys_seen(box) -> list:
    seen = []
    key, hold = box.app.key, box.app.hold
    box.app.key = lambda name: (seen.append(name), key(name))
    box.app.hold = lambda name: (seen.append(f"hold {name}"), hold(name))
    return seen


@pytest.mark.parametrize("board", list(FINGERS))
def test_a_whole_sequence_on_each_board_by_its_pins(make_box, session, mock_factory, board):
    box = make_box(box_config(board=board))
    assert box.board.id == board
    pins = FINGERS[board]
    for key, pin in pins.items():           # the very pin a finger closes is the box's
        name = box.keymap.by_pin(pin)
        assert box.buttons.devices[name].pin is mock_factory.pin(pin)
        assert box.keymap.key(name) == key
    seen = keys_seen(box)
    box.press_pin(pins["ok"])
    assert "Menu" in drawn(box)
    box.press_pin(pins["down"])
    assert box.app.layers[-1].cursor == 1
    box.press_pin(pins["up"])
    assert box.app.layers[-1].cursor == 0
    box.press_pin(pins["back"])
    assert "Menu" not in drawn(box) and "Game companion" in drawn(box)

    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    box.flush()
    for pin in [pins["down"], pins["ok"], *[pins["up"]] * 5, pins["ok"]]:   # +5 points to Ben
        box.press_pin(pin)
    if session.public()["scores"] != [0, 5, 0, 0]:
        box.press_pin(pins["ok"])                                            # the tokens' step
    assert session.public()["scores"] == [0, 5, 0, 0], drawn(box)
    assert box.hold_pin(pins["back"])
    assert "Undo the last action?" in drawn(box)
    box.press_pin(pins["ok"])
    assert session.public()["scores"] == [0, 0, 0, 0]
    assert seen[:4] == ["ok", "down", "up", "back"] and "hold back" in seen


def test_the_bonnets_a_is_ok_and_b_is_back_and_left_right_do_nothing(make_box, session):
    box = make_box(box_config(board="adafruit-oled-bonnet"))
    seen = keys_seen(box)
    box.press_pin(5)                                      # A
    assert "Menu" in drawn(box)
    before = box.frame_version
    box.press_pin(27)                                     # joystick left
    box.press_pin(23)                                     # joystick right
    assert box.frame_version == before and seen == ["ok"], "left and right do nothing"
    box.press_pin(6)                                      # B
    assert "Menu" not in drawn(box) and seen == ["ok", "back"]
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    session.submit({"type": "add", "seat": 1, "points": 5})
    box.flush()
    assert box.hold_pin(6) and "Undo the last action?" in drawn(box)


def test_the_waveshares_key1_is_ok_key3_is_back_key2_and_left_right_do_nothing(make_box):
    box = make_box(box_config(board="waveshare-oled-hat"))
    seen = keys_seen(box)
    box.press_pin(21)                                     # KEY1
    assert "Menu" in drawn(box) and seen == ["ok"]
    before = box.frame_version
    for pin in (20, 5, 26):                               # KEY2, joystick left, right
        box.press_pin(pin)
    assert box.frame_version == before and seen == ["ok"]
    box.press_pin(16)                                     # KEY3
    assert "Menu" not in drawn(box) and seen == ["ok", "back"]
    with pytest.raises(KeyError):
        box.press_pin(17)                                 # not one of this board's pins


def test_a_press_by_key_drives_the_boards_first_control_for_it(make_box, mock_factory):
    box = make_box(box_config(board="adafruit-oled-bonnet"))
    assert box.button_names == ["up", "down", "ok", "back"]
    pin = mock_factory.pin(4)                             # the joystick's press: the first OK
    before = len(pin.states)
    box.press("ok")
    assert len(pin.states) > before and "Menu" in drawn(box)


# -- outputs on a board's pins -------------------------------------------------------------

def test_leds_and_a_buzzer_on_a_boards_pins_are_refused_said_and_never_driven(make_box, session, mock_factory):
    box = make_box(box_config(board="adafruit-oled-bonnet", leds=[5, 6, 13, 19], buzzer=23))
    lit = [led.pin.number for led in box.outputs.leds if led is not None]
    assert lit == [13, 19], "only the LEDs on free pins"
    assert box.outputs.buzzer is None
    for pin in (5, 6, 23):                               # still the board's inputs, never outputs
        assert mock_factory.pin(pin).function == "input"
    [(template, params)] = session.table.notices
    text = gettext(template, "en", **params)
    for words in ("Adafruit 128x64 OLED Bonnet", "seat 1's LED on GPIO 5 (its A button)",
                  "seat 2's LED on GPIO 6 (its B button)", "the buzzer on GPIO 23 (its joystick's right)"):
        assert words in text, text
    french = gettext(template, "fr", **params)
    assert "GPIO 5" in french and "LED" in french and french != text
    # The box goes on: the notice on the panel, OK (the joystick's press) dismisses it.
    assert "Notice" in drawn(box)
    box.press_pin(4)
    assert session.table.notices == [] and "Game companion" in drawn(box)
    box.press_pin(5)
    assert "Menu" in drawn(box)


def test_a_wired_box_keeps_its_leds(make_box, session, mock_factory):
    box = make_box(box_config(board="wired", leds=[5, 6, 13, 19], buzzer=18))
    assert [led.pin.number for led in box.outputs.leds] == [5, 6, 13, 19]
    assert box.outputs.buzzer is not None and session.table.notices == []


def test_an_led_on_a_wired_boxs_own_button_is_refused(make_box, session):
    box = make_box(box_config(leds=[22]))
    assert box.board.id == "wired" and box.outputs.leds == [None]
    [(template, params)] = session.table.notices
    assert "GPIO 22 (its OK key)" in gettext(template, "en", **params)


# -- which board ------------------------------------------------------------------------------

def test_the_setting_the_environment_and_the_flag(tmp_path, monkeypatch):
    from appliance import cli

    assert cli.BOARDS == (boards.AUTO, *boards.IDS)
    (tmp_path / "companion.toml").write_text('board = "waveshare-oled-hat"\n')
    monkeypatch.delenv("COMPANION_BOARD", raising=False)
    assert cfg.load(tmp_path)["board"] == "waveshare-oled-hat"
    monkeypatch.setenv("COMPANION_BOARD", "adafruit-oled-bonnet")
    assert cfg.load(tmp_path)["board"] == "adafruit-oled-bonnet"
    args = cli.build_parser().parse_args(["run", "--mock", "--board", "wired"])
    assert args.board == "wired"
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "--board", "pi-hat-9000"])


def test_settings_that_name_their_own_pins_are_a_wired_box():
    assert boards.resolve(box_config()) is None                       # nothing set: found at the start
    for own in ({"leds": [5]}, {"buzzer": 18}, {"buttons": {"up": 5, "down": 6, "ok": 13, "back": 19}},
                {"display": {"driver": "sh1106"}}):
        assert boards.resolve(box_config(**own)).id == "wired", own
    assert boards.resolve(box_config(display={"retry_s": 0.1})) is None
    with pytest.raises(boards.BoardError, match="unknown board"):
        boards.resolve(box_config(board="pi-hat-9000"))
    assert boards.resolve(box_config(board="waveshare-oled-hat")).panel.rotate == 2
    assert boards.resolve(box_config(board="waveshare-oled-hat", display={"rotate": 0})).panel.rotate == 0


def test_an_unknown_board_setting_is_said_and_the_box_finds_its_board(make_box, session):
    box = make_box(box_config(board="pi-hat-9000"))
    assert box.board.id == "wired"
    [(template, params)] = session.table.notices
    assert "pi-hat-9000" in gettext(template, "en", **params)


def test_no_setting_and_an_i2c_panel_the_wired_keys_until_a_bonnet_only_pin_is_pressed(make_box, session):
    box = make_box(box_config(), i2c_probe=lambda: True)
    assert box.board.id == "wired"
    box.press_pin(22)                                      # the wired OK
    assert "Menu" in drawn(box)
    box.press_pin(23)                                      # the wired BACK
    assert "Menu" not in drawn(box)
    box.press_pin(5)                                       # only a Bonnet has a button there: A
    assert box.board.id == "adafruit-oled-bonnet" and "Menu" in drawn(box)
    box.press_pin(22)                                      # now the joystick's down
    assert box.app.layers[-1].cursor == 1
    box.press_pin(23)                                      # its right: nothing
    assert "Menu" in drawn(box) and box.app.layers[-1].cursor == 1
    box.press_pin(6)                                       # B
    assert "Menu" not in drawn(box)
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS})
    session.submit({"type": "add", "seat": 1, "points": 5})
    box.flush()
    assert box.hold_pin(6) and "Undo the last action?" in drawn(box), "B holds to undo once it is the Bonnet"


def test_no_setting_and_no_i2c_panel_the_waveshare_and_the_wired_buttons_both_work(make_box):
    box = make_box(box_config(), i2c_probe=lambda: False)
    assert box.board.id == "waveshare-oled-hat" and box.board.panel.bus == "spi"
    box.press_pin(13)                                      # the HAT's joystick press
    assert "Menu" in drawn(box)
    box.press_pin(23)                                      # a wired BACK (its panel is loose, its buttons are not)
    assert "Menu" not in drawn(box)
    box.press_pin(22)                                      # the wired OK
    box.press_pin(16)                                      # the HAT's KEY3
    assert "Menu" not in drawn(box) and box.board.id == "waveshare-oled-hat"


def test_the_mock_without_a_board_is_the_wired_box_and_probes_nothing(make_box):
    box = make_box(box_config())
    assert box.board.id == "wired" and box.keymap.decided


def test_every_board_lists_the_pins_it_takes():
    bonnet, hat = boards.BONNET, boards.WAVESHARE
    assert bonnet.pins == {2, 3, 4, 5, 6, 17, 22, 23, 27}
    assert hat.pins == {2, 3, 5, 6, 8, 9, 10, 11, 13, 16, 19, 20, 21, 24, 25, 26}
    assert (hat.panel.bus, hat.panel.dc, hat.panel.reset, hat.panel.device) == ("spi", 24, 25, 0)
    assert (bonnet.panel.bus, bonnet.panel.address, bonnet.panel.driver) == ("i2c", 0x3C, "ssd1306")
    wired = boards.wired(box_config())
    assert wired.pins == {2, 3, 17, 27, 22, 23}
    # The HAT's guess cannot harm a wired box: none of its outputs is a wired pin, LED or buzzer of wiring.md.
    assert not ({hat.panel.dc, hat.panel.reset, *boards.SPI0_PINS} & {2, 3, 17, 27, 22, 23, 5, 6, 13, 19, 18})
    for board in (bonnet, hat):
        assert {c.key for c in board.controls} == {"up", "down", "ok", "back", None}
        assert len({c.pin for c in board.controls}) == len(board.controls)


def test_a_board_box_with_pins_later_claims_its_pins_on_the_boxs_thread(session, mock_factory):
    box = Box(session, box_config(board="waveshare-oled-hat"), mock=True, pin_factory=mock_factory, pins_later=True)
    try:
        box.start()
        box.attach_pins()
        assert box.pins_ready.wait(10)
        box.press_pin(13)
        assert "Menu" in drawn(box)
    finally:
        box.close()


# -- the new screens, at 4x, both languages, through the layout check -------------------------------

SHOTS = None


def _shot(canvas, name):
    """test-artifacts/boards/<name>.png at 4x, to look at."""
    from conftest import ARTIFACTS
    from PIL import Image

    folder = ARTIFACTS / "boards"
    folder.mkdir(parents=True, exist_ok=True)
    canvas.image.resize((128 * 4, 64 * 4), Image.NEAREST).save(folder / f"{name}.png")


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("board", ["wired", "adafruit-oled-bonnet", "waveshare-oled-hat"])
def test_keep_this_board_is_laid_out_in_both_languages(make_box, session, board, language, tmp_path):
    from companion.i18n import set_language
    from hardware.draw import Canvas
    from hardware.layout import problems

    box = make_box(box_config(board=board, board_trial=board, language=language, data_dir=str(tmp_path)))
    try:
        set_language(language)
        canvas = Canvas()
        box.app.draw(canvas)
        assert not problems(canvas), problems(canvas)
        assert any(t in ("Keep this board?", "Garder la carte\u00a0?") for t in canvas.texts), canvas.texts
        _shot(canvas, f"keep-{board}-{language}")
    finally:
        set_language("en")


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_notices_of_boards_are_laid_out_and_read_to_their_end(make_box, session, language):
    from companion.i18n import set_language
    from hardware.display import NO_SPI_DISPLAY
    from hardware.draw import Canvas
    from hardware.layout import problems

    box = make_box(box_config(board="adafruit-oled-bonnet", leds=[5, 6, 13, 19], buzzer=23, language=language))
    session.update_table(lambda t: t.notices.append((NO_SPI_DISPLAY, {"error": "no SPI device (SPI off?)",
                                                                     "port": 0, "device": 0})))
    box.flush()
    try:
        set_language(language)
        for n in range(2):
            for line in range(12):                                   # scrolled to its end
                box.app.notice_line = line
                canvas = Canvas()
                box.app.draw(canvas)
                assert not problems(canvas), problems(canvas)
                if line == 0:
                    _shot(canvas, f"notice-{n}-{language}")
            box.press_pin(4)                                          # OK: the next notice
    finally:
        set_language("en")
