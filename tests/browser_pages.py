"""Long games for the phone-page checks (tests/browser/test_browser_fit.py and
tests/browser/test_browser_axe.py): every game in progress with the longest names
the box accepts, and many rounds of history; and the in-page checks.

A game is made by playing legal actions (test_fuzz_games.plausible, kept
only when the core accepts them, never the action that would end the game)
on a real Timeline; the log is imported into the running box
(``POST /api/history/import``) and made the game at the table with
``POST /api/history/<id>/resume`` -- one request each, whatever the length.
"""

from __future__ import annotations

import json
import random

from companion.errors import ActionError
from companion.timeline import Timeline

# 24 characters at most (the core's limit), accented, sharing their starts:
# abbreviations must still tell them apart.
LONG = ["Élodie-Françoise Łukasz", "Élodie-Françoise Dupont", "Øystein Großmann-Ñúñez",
        "Zoë Ångström-Kowalczyk", "Maximilian Schönbrunner"]
WIDTHS = (320, 360, 430)
LANGS = ("en", "fr")
# game: (players, options, accepted actions wanted, what the state must hold by then)
GAMES = {
    "scoreboard": (5, {}, 0, None),                  # scoreboard_rounds
    "third-man": (4, {"tokens_to_win": 9}, 200, lambda s: len(s["rounds"]) >= 12),
    "costly-tricks": (2, {"hands_to_win": 9}, 60, lambda s: len(s["hands"]) >= 2),
    "sloppy-seconds": (4, {"target": 5000}, 12, lambda s: len(s["hands"]) >= 8),
    "yenta": (5, {"target": 5000}, 60, lambda s: len(s["hands"]) >= 4),
    "diabolo": (5, {}, 60, lambda s: s["round"] >= 4),
    "fight": (5, {}, 26, lambda s: True),
}
PAGES = ("/", "/seat", "/seat/0", "/control")
SHARED_PAGES = ("/join", "/history", "/stats", "/backup", "/setup", "/update")
# Every game played to its end, with long names: the store holds a finished
# game of each kind (History's rows, its pages, Statistics), and each in turn
# ends at the table (the board's end, its last result).  game: (seats, options, seed)
FINISHED = {
    "third-man": (4, {"tokens_to_win": 2}, 15),
    "costly-tricks": (2, {"hands_to_win": 2}, 15),
    "sloppy-seconds": (4, {"target": 200}, 15),
    "yenta": (5, {"target": 40}, 15),
    "diabolo": (5, {}, 15),
    "fight": (3, {}, 0),
    "scoreboard": (5, {"target": 60, "name": "Élodie-Françoise’s Carcassonne"}, 15),
}


def long_game(game: str, seed: int = 15) -> list[dict]:
    """The log of a long unfinished ``game`` with GAMES[game][0] long names."""
    from test_fuzz_games import plausible

    if game == "scoreboard":
        return scoreboard_rounds(rounds=12, seed=seed)

    n, options, wanted, enough = GAMES[game]
    rng = random.Random(seed)
    first = {"type": "new_game", "game": game, "players": LONG[:n], "options": options}
    t = Timeline()
    t.apply(first)
    kept = [first]
    tries = 0
    while tries < 50 * wanted and (len(kept) < wanted or not enough(t.public())):
        tries += 1
        action = plausible(game, t, rng)
        if game == "sloppy-seconds" and len(t.public()["hands"]) < 8:
            action = sloppy_hand(n, rng)         # suit totals that add up, so hands end
        if action.get("type") in ("undo", "new_game"):
            continue
        try:
            t.apply(action)             # a refusal leaves the timeline as it was
        except ActionError:
            continue
        if t.finished:                  # one step too far: replay without it
            t = Timeline()
            for a in kept:
                t.apply(a)
            continue
        kept.append(action)
    return kept


def finished_long_game(game: str) -> list[dict]:
    """The log of ``game`` played to its end (FINISHED's seats, options and
    seed) with the long names: legal actions only, the last one ends it."""
    from test_fuzz_games import plausible

    n, options, seed = FINISHED[game]
    rng = random.Random(seed)
    first = {"type": "new_game", "game": game, "players": LONG[:n], "options": options}
    t = Timeline()
    t.apply(first)
    kept = [first]
    for _ in range(200_000):
        action = sloppy_hand(n, rng) if game == "sloppy-seconds" else plausible(game, t, rng)
        if action.get("type") in ("undo", "new_game"):
            continue
        try:
            t.apply(action)
        except ActionError:
            continue
        kept.append(action)
        if t.finished:
            return kept
    raise AssertionError(f"{game} did not end")


def sloppy_hand(n: int, rng: random.Random) -> dict:
    """A hand's points per seat and suit: each suit's 91 split among the seats."""
    points = [{} for _ in range(n)]
    for suit in "SHDC":
        cuts = sorted(rng.randint(0, 91) for _ in range(n - 1))
        parts = [b - a for a, b in zip([0] + cuts, cuts + [91])]
        for seat, v in enumerate(parts):
            points[seat][suit] = v
    return {"type": "hand", "points": points}


def scoreboard_rounds(rounds: int, seed: int) -> list[dict]:
    """Five long names, ``rounds`` rounds of points then a secret round
    (revealed), and one more secret entered (still hidden)."""
    rng = random.Random(seed)
    log = [{"type": "new_game", "game": "scoreboard", "players": LONG}]
    for _ in range(rounds):
        log += [{"type": "add", "seat": s, "points": rng.randint(-40, 60)} for s in range(5)]
        log += [{"type": "secret", "seat": s, "value": rng.randint(-500, 999)} for s in range(5)]
    log.append({"type": "token", "seat": 2, "delta": 1})
    log.append({"type": "secret", "seat": 1, "value": 12345})
    return log


def finished_game() -> list[dict]:
    """A short finished scoreboard game: statistics need one."""
    return [{"type": "new_game", "game": "scoreboard", "players": LONG, "options": {"target": 10}},
            {"type": "add", "seat": 1, "points": 4}, {"type": "add", "seat": 3, "points": 12}]


# A page drawn from the history (the scoreboard, a stored game's page) is
# whole once its script has drawn what the history brought (board.js,
# history.js: Companion.historyDrawn): wait for that, not for a time.
DRAWN_JS = ("() => !window.Companion || !(document.getElementById('board') || document.getElementById('step-board'))"
            " || document.body.classList.contains('page-seat') || document.body.classList.contains('page-seats')"
            " || document.body.classList.contains('page-control') || window.Companion.historyDrawn === true")


def settle(page) -> None:
    """Wait until the page has drawn its history (see DRAWN_JS)."""
    page.wait_for_function(DRAWN_JS)


def jsonl(actions: list[dict]) -> bytes:
    return ("\n".join(json.dumps(a, ensure_ascii=False) for a in actions) + "\n").encode()


# What passes the phone's right edge.  An element inside a box that scrolls
# sideways on purpose is fine when that box fits and a keyboard can reach it
# (it is focusable, or holds something focusable).
OVERFLOW_JS = """(width) => {
  const out = [];
  const doc = document.documentElement.scrollWidth;
  if (doc > width) out.push("the page is " + doc + "px wide");
  function scroller(node) {
    for (let p = node.parentElement; p; p = p.parentElement) {
      const st = getComputedStyle(p);
      if ((st.overflowX === "auto" || st.overflowX === "scroll") && p.scrollWidth > p.clientWidth) return p;
    }
    return null;
  }
  function reachable(box) {
    return box.tabIndex >= 0 || box.querySelector("a[href], button, input, select, textarea, [tabindex]") !== null;
  }
  function describe(el) {
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : "");
  }
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || r.right <= width + 0.5) continue;
    const parent = el.parentElement;
    if (parent && parent !== document.body && parent.getBoundingClientRect().right > width + 0.5 && !scroller(el)) continue;
    const box = scroller(el);
    if (box) {
      if (box.getBoundingClientRect().right > width + 0.5) out.push(describe(box) + " scrolls but is wider than the phone");
      else if (!reachable(box)) out.push(describe(box) + " scrolls but a keyboard cannot reach it");
      continue;
    }
    out.push(describe(el) + " ends at " + Math.round(r.right) + "px: " + (el.textContent || "").trim().slice(0, 40));
  }
  return [...new Set(out)].slice(0, 8);
}"""
