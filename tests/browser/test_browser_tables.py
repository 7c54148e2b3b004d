"""Tables that scroll sideways, in Chromium at 320, 360 and 430 px, in
English and French (issue 19):

* the names column that stays put never hides a number: at every position
  the box rests at while scrolled through its range, each cell is either
  whole in sight (it is the element at its own centre, and its text starts
  right of the names) or wholly under the names, none of its text showing
  ("10 ●" never reads "0 ●");
* a box that scrolls says so: a shadow on each side where more is hidden,
  none where nothing is;
* no header is cut inside its own cell unless it ends with an ellipsis and
  carries its whole text in a title.

One box for the run (browser_support.long_table: every game with long
names and many rounds, and a finished game for the statistics).
"""

from __future__ import annotations

import pytest

from browser_pages import LANGS, WIDTHS, settle
from test_browser import PIN, WAIT_MS  # noqa: F401  (the skip rules come with it)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

SETTLE_MS = 400
STEP_PX = 9              # the positions tried: every 9 px through the range, and its end

# Every sideways-scrolling box of the page, scrolled through its range; what
# is wrong at each position the box rests at.
TABLES_JS = """async (step) => {
  const out = [];
  const boxes = Array.from(document.querySelectorAll(".scroll")).filter(b => b.offsetParent !== null);
  function name(box) { return (box.getAttribute("aria-label") || box.className) + ""; }
  function textRect(cell) {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rects = Array.from(range.getClientRects()).filter(r => r.width > 0.5);
    if (!rects.length) return null;
    return { left: Math.min(...rects.map(r => r.left)), right: Math.max(...rects.map(r => r.right)) };
  }
  function cue(box, side) {
    // The box says "more-left"/"more-right" and draws it: its own shadow, or
    // on the left of a names column, the names' shadow (they cover the box's).
    if (!box.classList.contains("more-" + side)) return false;
    const sticky = box.querySelector("th.who, table.sticky-names tbody th");
    if (side === "left" && sticky) {
      const strip = getComputedStyle(sticky, "::after");
      return strip.content !== "none" && strip.backgroundImage !== "none" && parseFloat(strip.opacity) > 0.5 &&
             parseFloat(strip.width) >= 6;
    }
    return getComputedStyle(box).boxShadow !== "none";
  }
  for (const box of boxes) {
    const max = box.scrollWidth - box.clientWidth;
    const label = name(box);
    if (max <= 1) {
      if (cue(box, "left") || cue(box, "right")) out.push(label + ": a scroll cue on a box that does not scroll");
      continue;
    }
    const sticky = Array.from(box.querySelectorAll("th.who, table.sticky-names tbody th, table.sticky-names thead th:first-child"));
    const cells = Array.from(box.querySelectorAll("td, thead th")).filter(c => !sticky.includes(c));
    box.scrollIntoView({ block: "center" });
    const positions = [];
    for (let x = 0; x < max; x += step) positions.push(x);
    positions.push(max);
    const seen = new Set();
    for (const want of positions) {
      box.scrollLeft = want;            // Chromium snaps a scroll made by a script at once
      const at = Math.round(box.scrollLeft);
      if (seen.has(at)) continue;
      seen.add(at);
      const b = box.getBoundingClientRect();
      const inner = { left: b.left + box.clientLeft, right: b.left + box.clientLeft + box.clientWidth,
                      top: b.top, bottom: b.top + box.clientHeight };
      const edge = sticky.length ? Math.max(...sticky.map(s => s.getBoundingClientRect().right)) : inner.left;
      for (const cell of cells) {
        const r = cell.getBoundingClientRect();
        if (r.right <= edge + 0.5 || r.left >= inner.right - 0.5 || !r.width) continue;     // out of sight
        const text = textRect(cell);
        const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
        const words = (cell.textContent || "").trim().slice(0, 16);
        if (cy < 0 || cy > innerHeight) continue;                                            // off the screen
        if (cx < edge) {                     // its middle is under the names: none of its text may show
          if (text && text.right > edge + 0.5) out.push(label + " at " + at + "px: '" + words + "' half under the names");
        } else if (cx < inner.right - 1) {       // (a cell cut by the box's far edge is what scrolling is)
          const hit = document.elementFromPoint(cx, cy);
          if (!hit || !(hit === cell || cell.contains(hit))) out.push(label + " at " + at + "px: '" + words + "' is not the element at its centre (" +
            (hit ? hit.tagName.toLowerCase() + "." + hit.className + " '" + (hit.textContent || "").trim().slice(0, 20) + "'" : "nothing") + ")");
          if (text && text.left < edge - 0.5) out.push(label + " at " + at + "px: '" + words + "' starts under the names");
        }
      }
    }
  }
  // The cues, at the start, in the middle and at the end (a scroll event comes with the next frame,
  // later on a loaded machine): wait until the cues agree with where the box is, with a generous
  // ceiling (a page that is not in front gets no animation frame in headless Chromium: the check
  // never hangs), then judge them.
  const agree = (box) => {
    const at = box.scrollLeft, still = box.scrollWidth - box.clientWidth;
    return cue(box, "right") === (at < still - 1) && cue(box, "left") === (at > 1) &&
           box.classList.contains("more-right") === (at < still - 1) && box.classList.contains("more-left") === (at > 1);
  };
  const settled = async (box) => {
    for (let waited = 0; waited < 5000 && !agree(box); waited += 50) await new Promise(r => setTimeout(r, 50));
  };
  for (const box of boxes) {
    const max = box.scrollWidth - box.clientWidth;
    if (max <= 1) continue;
    for (const want of [0, max / 2, max]) {
      box.scrollLeft = want;
      await settled(box);
      const at = Math.round(box.scrollLeft), still = box.scrollWidth - box.clientWidth;
      if (at < still - 1 && !cue(box, "right")) out.push(name(box) + " at " + at + "px: more to the right, and no cue");
      if (at >= still - 1 && box.classList.contains("more-right")) out.push(name(box) + " at its end: a cue on the right");
      if (at > 1 && !cue(box, "left")) out.push(name(box) + " at " + at + "px: more to the left, and no cue");
      if (at <= 1 && box.classList.contains("more-left")) out.push(name(box) + " at its start: a cue on the left");
    }
  }
  // A header's text wider than its own cell is cut (or runs over its neighbour).
  for (const th of document.querySelectorAll("th")) {
    if (th.offsetParent === null) continue;
    const text = textRect(th), r = th.getBoundingClientRect();
    if (text && (text.right > r.right + 1 || text.left < r.left - 1)) {
      const st = getComputedStyle(th);
      if (st.textOverflow !== "ellipsis" || !th.title) out.push("header '" + th.textContent.trim() + "' is cut without an ellipsis and a title");
    }
  }
  return [...new Set(out)];
}"""


def phone_pages(browser, lang, token=None):
    context = browser.new_context(locale="fr-FR" if lang == "fr" else "en-GB", is_mobile=True, has_touch=True,
                                  viewport={"width": WIDTHS[0], "height": 740})
    context.set_default_timeout(WAIT_MS)
    if token:
        context.add_init_script(f"localStorage.setItem('companion.seats', JSON.stringify({{'0': '{token}'}}))")
    pages = {}
    for width in WIDTHS:
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 740})
        pages[width] = page
    return context, pages


def check(pages, base, paths, lang):
    problems = []
    for width, page in pages.items():
        for path in paths:
            page.bring_to_front()             # its scroll events and frames run (a page behind is throttled)
            page.goto(base + path)
            settle(page)                      # drawn from the history: no redraw closes what is opened below
            page.wait_for_timeout(SETTLE_MS)
            # The older bids' tables are in closed <details>: open them all.
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            page.wait_for_timeout(100)
            problems += [f"{path} at {width}px ({lang}): {p}" for p in page.evaluate(TABLES_JS, STEP_PX)]
    return problems


# The games whose pages have tables of rounds or hands.
TABLE_GAMES = ("third-man", "costly-tricks", "sloppy-seconds", "yenta", "diabolo", "scoreboard")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("game", TABLE_GAMES)
def test_no_number_hides_under_the_names_and_every_scrolling_table_says_so(browser, long_table, game, lang):
    table = long_table.play(game)
    context, pages = phone_pages(browser, lang)
    try:
        problems = check(pages, table.base, ["/", f"/history/{table.ids[game]}"], lang)
    finally:
        context.close()
    assert not problems, "\n".join(problems[:25])


@pytest.mark.parametrize("lang", LANGS)
def test_the_statistics_tables_say_that_they_scroll(browser, long_table, lang):
    table = long_table.play("third-man")
    context, pages = phone_pages(browser, lang)
    try:
        problems = check(pages, table.base, ["/stats"], lang)
    finally:
        context.close()
    assert not problems, "\n".join(problems[:25])
