"""Panel care (hardware/panel_care.py): the OLED dims, then sleeps, when
nobody touches the table; any button wakes it (the press that wakes a
sleeping panel does nothing else), a change from a phone wakes it too; the
mock box's own frame is black while it sleeps; long-lived screens move by a
pixel now and then within the layout rules.

Time is a fake clock handed to the box: a test moves it and lets the box's
thread look (``flush``), so no test waits for the panel's delays.
"""

from __future__ import annotations

import pytest
from luma.core.interface.serial import i2c

from companion import config as cfg
from hardware import draw as d
from hardware import panel_care as pc
from hardware.display import make_device
from hardware.i2c_panel import EmulatedPanel
from hardware.layout import problems
from hardware.testing import box_config

from box_support import make_box, mock_factory  # noqa: F401 (fixtures)

PLAYERS = ["Ann", "Ben", "Chloé", "Dan"]


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def care_box(make_box, dim_s=60, sleep_s=120, **config):
    clock = FakeClock()
    box = make_box(box_config(panel_dim_s=dim_s, panel_sleep_s=sleep_s, **config), clock=clock)
    return box, clock


def later(box, clock, seconds: float) -> None:
    clock.now += seconds
    box.flush()


def black(box) -> bool:
    return box.frame.image.getbbox() is None


def test_the_panel_dims_then_sleeps_and_its_frame_goes_black(make_box):
    box, clock = care_box(make_box)
    lit = box.frame.image.copy()
    assert box.care.state == pc.LIT and box.screen.contrast == pc.BRIGHTNESS["medium"]
    later(box, clock, 59)
    assert box.care.state == pc.LIT
    later(box, clock, 2)
    assert box.care.state == pc.DIM and box.screen.contrast == pc.DIM_CONTRAST and box.screen.lit
    assert box.frame.image.tobytes() == lit.tobytes()        # dimmed, the same picture
    later(box, clock, 60)
    assert box.care.state == pc.ASLEEP and not box.screen.lit
    assert black(box) and box.frame.texts == ()
    assert box.frame_png(1, mirror=False) != box.frame_png(1)      # phones still see the table
    assert box.mirror.image.getbbox() is not None


def test_the_press_that_wakes_a_sleeping_panel_does_nothing_else(make_box):
    box, clock = care_box(make_box)
    later(box, clock, 121)
    assert black(box)
    box.press("ok")                                         # on the idle screen: would open the menu
    assert box.care.state == pc.LIT and not black(box)
    assert box.app.layers == [] and "Menu" not in box.frame.texts
    box.press("ok")                                         # the next press is the player's
    assert "Menu" in box.frame.texts


def test_a_long_press_that_wakes_the_panel_asks_nothing(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box, clock = care_box(make_box)
    later(box, clock, 500)
    assert box.hold("back")                                 # would ask "Undo the last action?"
    assert box.care.state == pc.LIT and box.app.layers == []


def test_a_press_on_a_dimmed_panel_acts_and_brings_the_brightness_back(make_box):
    box, clock = care_box(make_box)
    later(box, clock, 61)
    assert box.care.state == pc.DIM
    box.press("ok")
    assert "Menu" in box.frame.texts
    assert box.care.state == pc.LIT and box.screen.contrast == pc.BRIGHTNESS["medium"]
    later(box, clock, 59)                                   # the idle time counts from the press
    assert box.care.state == pc.LIT


def test_a_change_from_a_phone_wakes_the_panel(make_box, session):
    box, clock = care_box(make_box)
    later(box, clock, 200)
    assert black(box)
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})   # not the box's thread
    box.flush()
    assert box.care.state == pc.LIT and not black(box)


def test_zero_turns_dimming_off(make_box):
    box, clock = care_box(make_box, dim_s=0, sleep_s=120)
    later(box, clock, 100)
    assert box.care.state == pc.LIT
    later(box, clock, 30)
    assert box.care.state == pc.ASLEEP


def test_zero_turns_sleep_off(make_box):
    box, clock = care_box(make_box, dim_s=60, sleep_s=0)
    later(box, clock, 10 * 86400)
    assert box.care.state == pc.DIM and not black(box)


def test_asleep_the_box_thread_has_no_deadline(make_box):
    box, clock = care_box(make_box)
    later(box, clock, 121)
    assert box.care.next_deadline() is None
    assert box._timeout() is None                           # it sleeps until something happens


def test_a_dimmed_box_waits_for_its_next_step_only(make_box, session):
    session.submit({"type": "new_game", "game": "third-man", "players": PLAYERS})
    box, clock = care_box(make_box, dim_s=60, sleep_s=120)
    assert box.care.next_deadline() == clock.now + 60
    later(box, clock, 61)
    assert box.care.next_deadline() == clock.now - 61 + 120


def test_the_settings_and_their_environment_variables(tmp_path, monkeypatch):
    config = cfg.load(tmp_path)
    assert (config["panel_dim_s"], config["panel_sleep_s"]) == (600, 1800)
    (tmp_path / "companion.toml").write_text("panel_dim_s = 30\npanel_sleep_s = 90\n")
    config = cfg.load(tmp_path)
    care = pc.PanelCare(config, FakeClock())
    assert (care.dim_s, care.sleep_s) == (30, 90)
    monkeypatch.setenv("COMPANION_PANEL_DIM_S", "0")
    monkeypatch.setenv("COMPANION_PANEL_SLEEP_S", "45")
    care = pc.PanelCare(cfg.load(tmp_path), FakeClock())
    assert (care.dim_s, care.sleep_s) == (0, 45)


@pytest.mark.parametrize("bad", ["soon", "-5", "nan", "inf", [1]])
def test_a_bad_delay_is_said_in_one_line_and_the_default_used(bad, caplog):
    care = pc.PanelCare({"panel_dim_s": bad, "panel_sleep_s": bad}, FakeClock())
    assert (care.dim_s, care.sleep_s) == (pc.DIM_S, pc.SLEEP_S)
    assert caplog.records and all("\n" not in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("controller", ["ssd1306", "sh1106"])
def test_dim_sleep_and_wake_reach_the_glass(make_box, controller):
    panel = EmulatedPanel(controller)

    def opener():
        return make_device(controller, i2c(bus=panel, address=0x3C))
    clock = FakeClock()
    box = make_box(box_config(panel_dim_s=60, panel_sleep_s=120, panel_brightness="high",
                              display={"driver": controller}), display_factory=opener, clock=clock)
    assert panel.on and panel.contrast == 0xFF
    later(box, clock, 61)
    assert panel.on and panel.contrast == pc.DIM_CONTRAST
    shown = panel.image().tobytes()
    later(box, clock, 60)
    assert not panel.on                                     # display off: no pixel lit
    before = panel.counters()
    later(box, clock, 3600)                                 # asleep: nothing goes over the wire
    assert panel.counters() == before
    box.press("down")
    assert panel.on and panel.contrast == 0xFF
    assert panel.image().tobytes() == box.frame.image.tobytes() and shown


def test_a_panel_found_again_gets_the_contrast_it_should_have(make_box):
    from hardware.testing import VanishingPanel

    panel = VanishingPanel()
    clock = FakeClock()
    box = make_box(box_config(panel_dim_s=60, panel_sleep_s=0, display={"retry_s": 0.05}),
                   display_factory=panel.opener, clock=clock)
    later(box, clock, 61)
    assert box.care.state == pc.DIM
    applied = []
    box.screen.device = None                              # lost...
    panel.contrast = lambda level: applied.append(level)
    box.screen.adopt(panel)                                # ...and found again
    assert applied == [pc.DIM_CONTRAST]


# -- moving long-lived screens ---------------------------------------------------------------------

def test_a_long_lived_screen_moves_by_a_pixel_now_and_then_within_the_layout_rules(make_box):
    box, clock = care_box(make_box, dim_s=0, sleep_s=0)
    first = box.frame.image.copy()
    places = {first.getbbox()}
    for _ in range(len(pc.ORBIT)):
        later(box, clock, pc.SHIFT_S)
        places.add(box.frame.image.getbbox())
    assert len(places) >= 4                                  # it moved round
    box.press("ok")                                          # the menu is not long-lived: in its place
    assert not box.app.long_lived() and box.care.next_shift is None
    c = d.Canvas()
    box.app.draw(c)
    assert box.frame.image.tobytes() == c.image.tobytes()


@pytest.mark.parametrize("step", range(len(pc.ORBIT)))
def test_every_place_of_the_orbit_keeps_the_idle_screen_clean(make_box, step):
    box, clock = care_box(make_box, dim_s=0, sleep_s=0)
    app = box.app
    care = pc.PanelCare({"panel_dim_s": 0, "panel_sleep_s": 0}, FakeClock())
    care.long_lived(True)
    care.step = step
    c = d.Canvas()
    app.draw(c)
    assert problems(c) == []
    dx, dy = care.place(c)
    assert problems(c) == [], (dx, dy)
    if step:
        assert (dx, dy) != (0, 0)


def test_a_frame_that_fills_the_panel_does_not_move():
    c = d.Canvas()
    c.header("Menu", "1/5")
    c.fill(0, 0, d.WIDTH - 1, 0)                              # lit from edge to edge
    c.fill(0, d.HEIGHT - 1, d.WIDTH - 1, d.HEIGHT - 1)
    before = c.image.tobytes()
    care = pc.PanelCare({}, FakeClock())
    care.long_lived(True)
    care.step = 1
    assert care.place(c) == (0, 0) and c.image.tobytes() == before


def test_at_rest_the_box_thread_waits_for_the_panel_s_next_step_only(make_box):
    box, clock = care_box(make_box, dim_s=60, sleep_s=120)
    box.press("ok")                                          # the menu: nothing moves on it
    assert box.app.next_deadline() is None and box.debouncer.next_deadline() is None
    assert box.care.next_deadline() == clock.now + 60       # one timer, minutes away


# -- brightness --------------------------------------------------------------------------------------

def to_row(box, label: str) -> None:
    menu = box.app.layers[-1]
    for _ in range(len(menu.rows())):
        if menu.rows()[menu.cursor][0] == label:
            return
        box.press("down")
    raise AssertionError(f"no {label} row in {menu.rows()}")


def test_brightness_steps_at_once_and_is_kept_for_the_next_start(make_box, session):
    box, clock = care_box(make_box)
    box.press("ok")                                          # the menu
    to_row(box, "Brightness")
    seen = []
    for _ in range(3):
        box.press("ok")
        seen.append((box.app.config["panel_brightness"], box.screen.contrast))
    assert seen == [("high", 0xFF), ("low", 0x10), ("medium", 0x60)]
    box.press("down")
    box.press("up")
    box.press("ok")                                          # high, again
    assert "Brightness" in box.frame.texts and "high" in box.frame.texts
    kept = cfg.load(session.store.dir)
    assert kept["panel_brightness"] == "high"
    assert pc.PanelCare(kept, FakeClock()).contrast() == 0xFF


def test_brightness_is_said_in_french(make_box, session):
    box, clock = care_box(make_box, language="fr")
    box.press("ok")
    to_row(box, "Brightness")                                # (this thread speaks English)
    assert "Luminosité" in box.frame.texts and "moyenne" in box.frame.texts
    box.press("ok")
    assert "forte" in box.frame.texts


def test_a_dimmed_panel_stays_dim_whatever_the_brightness(make_box):
    box, clock = care_box(make_box, panel_brightness="low")
    assert box.screen.contrast == 0x10
    later(box, clock, 61)
    assert box.screen.contrast == pc.DIM_CONTRAST < 0x10


def test_a_delay_of_ages_keeps_the_box_alive(make_box):
    box, clock = care_box(make_box, dim_s=1e300, sleep_s=0)
    box.press("ok")                                          # the worker still answers
    assert "Menu" in box.frame.texts
    later(box, clock, 1e6)
    assert box.care.state == pc.LIT


# -- the mock box's web page ---------------------------------------------------------------------------

def test_dev_oled_png_is_black_while_the_panel_sleeps_and_a_dev_press_wakes_it(make_box, session):
    from web_support import make_app

    box, clock = care_box(make_box)
    app = make_app(session, box=box, mock=True, url="http://192.168.1.20:8000/")
    client = app.test_client()
    try:
        def png(path):
            from io import BytesIO

            from PIL import Image
            r = client.get(path + "?scale=1")
            assert r.status_code == 200
            return Image.open(BytesIO(r.data)).convert("1")
        assert png("/dev/oled.png").getbbox() is not None
        later(box, clock, 121)
        assert png("/dev/oled.png").getbbox() is None          # the panel as it is: off
        assert png("/oled.png").getbbox() is not None          # the phones' mirror: the table
        r = client.post("/dev/buttons/ok/press", headers={"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"})
        assert r.status_code < 300
        assert png("/dev/oled.png").getbbox() is not None and box.app.layers == []   # woken; no menu
    finally:
        app.extensions["companion"].close()


def test_a_running_turn_clock_keeps_the_panel_lit_and_a_paused_one_lets_it_sleep(make_box):
    """A clock that runs is being watched: its screen redraws every second and
    the panel neither dims nor sleeps; paused, the panel's delays count again."""
    box, clock = care_box(make_box, dim_s=60, sleep_s=120)
    session = box.session
    session.clock.now = clock                      # one fake time for the clock and the panel
    session.submit({"type": "new_game", "game": "scoreboard", "players": PLAYERS, "options": {"target": 10}})
    session.clock_set("sudden", 3_600_000, 0)
    assert session.clock.running
    for _ in range(5):
        later(box, clock, 50)                      # 250 s with nobody touching anything
        box._wait(box._post(("refresh",)))         # the clock screen's redraw of each second
    assert box.care.state == pc.LIT and not black(box)
    assert session.clock_pause()
    box.flush()
    later(box, clock, 130)
    box._wait(box._post(("refresh",)))
    assert box.care.state == pc.ASLEEP and black(box)
