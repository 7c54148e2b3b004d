"""The scores chart after any number of rounds (issue 19): a round's label
only for a round that was played (an 8-round match has no "R9"), the last
one labelled, no label cut by the chart's edge or drawn over another, and a
legend that spells each name whole ("Marc-Antoine", never "Mar… Marc-Antoine").

The chart is drawn by the page's own scripts (games.js's series,
chart.js, board.js's legend) from steps made here: a Third Man match of
N rounds, finished or still going.
"""

from __future__ import annotations

import re

import pytest

from browser_pages import LONG
from test_browser import WAIT_MS, table  # noqa: F401  (fixture; the skip rules come with it)

pytest_plugins = ["browser_support"]
pytestmark = pytest.mark.browser

TABLE_NAMES = ["Zoé", "Marc-Antoine", "Li", "Ingrid"]

# Steps of a Third Man match of ``rounds`` rounds (three bids each, the
# scores moving apart), drawn with C.renderChart in a new section; returns
# what a reader sees: the round labels, every text's box, the legend.
CHART_JS = """([rounds, players, finished]) => {
  const C = window.Companion;
  const steps = [];
  let before = null, done = [];
  function push(action, state) { steps.push({ n: steps.length + 1, action: action, state: state, before: before }); before = state; }
  push({ type: "new_game" }, { game: "third-man", players: players, scores: players.map(() => 0), rounds: [], finished: false });
  for (let r = 1; r <= rounds; r++) {
    let scores = players.map(() => 0);
    for (let b = 1; b <= 3; b++) {
      scores = scores.map((v, seat) => v + (seat + 1 - players.length / 2) * b * 2 + (r % 3));
      push({ type: "bid" }, { game: "third-man", players: players, scores: scores, rounds: done, finished: false });
    }
    done = done.concat([{ scores: scores, token: 0 }]);
    const last = r === rounds && finished;
    push({ type: "bid" }, { game: "third-man", players: players, scores: last ? scores : players.map(() => 0),
                            rounds: done, finished: last });
  }
  const root = document.createElement("section");
  root.className = "card chart-wrap";
  document.querySelector("main").appendChild(root);
  C.renderChart(root, steps[steps.length - 1].state, steps);
  const svg = root.querySelector("svg.chart");
  const box = svg.getBoundingClientRect();
  const texts = Array.from(svg.querySelectorAll("text")).map(el => {
    const r = el.getBoundingClientRect();
    return { text: el.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  });
  return {
    svg: { left: box.left, right: box.right, top: box.top, bottom: box.bottom },
    labels: texts.filter(t => /^R\\d+$/.test(t.text)).map(t => t.text),
    texts: texts,
    legend: Array.from(root.querySelectorAll(".legend li")).map(li => li.textContent.trim())
  };
}"""


def overlaps(a, b, slack=0.5):
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]) > slack and
            min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > slack)


def problems_of(drawn, rounds, players, finished):
    out = []
    labels = drawn["labels"]
    numbers = [int(label[1:]) for label in labels]
    played = rounds if finished else rounds + 1          # a match going on has started its next round
    out += [f"{label} marks a round that was not played ({rounds} rounds)" for label, k in zip(labels, numbers)
            if not 2 <= k <= played]
    if played >= 2 and (not numbers or numbers[-1] != played):
        out.append(f"the last round is not labelled: {labels}")
    if numbers != sorted(set(numbers)):
        out.append(f"labels out of order or twice: {labels}")
    svg = drawn["svg"]
    for t in drawn["texts"]:
        if t["left"] < svg["left"] - 0.5 or t["right"] > svg["right"] + 0.5 or t["top"] < svg["top"] - 0.5 \
                or t["bottom"] > svg["bottom"] + 0.5:
            out.append(f"{t['text']!r} passes the chart's edge")
    texts = drawn["texts"]
    for i, a in enumerate(texts):
        out += [f"{a['text']!r} drawn over {b['text']!r}" for b in texts[i + 1:] if overlaps(a, b)]
    for name, entry in zip(players, drawn["legend"]):
        if name not in entry:
            out.append(f"the legend does not spell {name!r}: {entry!r}")
        if "\u2026" in entry:
            out.append(f"a cut name in the legend: {entry!r}")
    if len(drawn["legend"]) != len(players):
        out.append(f"the legend has {len(drawn['legend'])} entries for {len(players)} players")
    return out


@pytest.mark.parametrize("players", [TABLE_NAMES, LONG[:4]], ids=["table-names", "long-names"])
@pytest.mark.parametrize("width", [320, 430])
def test_the_chart_labels_and_legend_are_right_after_any_number_of_rounds(browser, table, players, width):
    context = browser.new_context(viewport={"width": width, "height": 740}, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT_MS)
    found = []
    try:
        page = context.new_page()
        page.goto(table.base + "/")
        for rounds in (1, 2, 8, 9, 30):
            for finished in (True, False):
                page.reload()
                drawn = page.evaluate(CHART_JS, [rounds, players, finished])
                found += [f"{rounds} rounds{' (over)' if finished else ''}: {p}"
                          for p in problems_of(drawn, rounds, players, finished)]
    finally:
        context.close()
    assert not found, "\n".join(found[:20])


def test_the_chart_checks_can_fail():
    drawn = {"labels": ["R2", "R9"], "svg": {"left": 0, "right": 100, "top": 0, "bottom": 50},
             "texts": [{"text": "R9", "left": 95, "right": 110, "top": 0, "bottom": 10},
                       {"text": "Mar…", "left": 96, "right": 105, "top": 2, "bottom": 12}],
             "legend": ["Mar… Marc-Antoine"]}
    found = " | ".join(problems_of(drawn, 8, ["Marc-Antoine"], True))
    for what in ("R9 marks a round", "passes the chart's edge", "drawn over", "a cut name"):
        assert what in found, found
    assert re.search(r"R9", found)
