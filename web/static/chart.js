/* Scores over time as an inline SVG line chart, one line per seat.

   Companion.chart(series, players) -> <svg>
   series = {points: [[score per seat], ...],          one entry per step
             breaks: [{at: index, label: "R2"}, ...],  a new round/hand starts at index
             band: [lo, hi] or null}                    dashed guide lines (Third Man's ±20)
   Colours come from the CSS classes s0..s7 (the same as the seat dots); a
   colour is never the only cue: each seat's line has its own dash pattern
   (CSS) and a mark at its end (C.marks: "Ann", "ÉFŁ"), which the legend
   spells out.  A long game draws a wider chart, PX_PER_STEP pixels a step,
   that scrolls sideways (board.js) rather than squeezing its rounds. */
(function () {
  "use strict";
  var C = window.Companion;
  var NS = "http://www.w3.org/2000/svg";
  var MIN_W = 360, H = 190, LEFT = 36, TOP = 14, BOTTOM = 10;
  // LABEL_GAP: the line pitch of the end marks, their glyphs whole (an accent over a descender: 11 px type)
  var PX_PER_STEP = 7, MARK_PX = 8, LABEL_GAP = 15, BREAK_LABEL_PX = 26;

  function el(tag, attrs, text) {
    var node = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A round step (1, 2, 5 × 10^k) giving at most ~5 ticks over the span.
  function tickStep(span) {
    var raw = Math.max(span / 5, 1);            // scores are whole numbers
    var mag = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * mag >= raw) return steps[i] * mag;
    }
    return 10 * mag;
  }

  // A sample of a seat's line for the legend: its colour and its dash pattern.
  C.lineSample = function (seat) {
    var svg = el("svg", { viewBox: "0 0 28 10", width: 28, height: 10, class: "chart sample", "aria-hidden": "true" });
    svg.appendChild(el("line", { x1: 1, x2: 27, y1: 5, y2: 5, class: "line s" + (seat % 8) }));
    return svg;
  };

  C.chart = function (series, players) {
    var points = series.points;
    var lo = 0, hi = 0;
    points.forEach(function (scores) {
      scores.forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); });
    });
    if (series.band) { lo = Math.min(lo, series.band[0]); hi = Math.max(hi, series.band[1]); }
    if (hi - lo < 5) { hi = lo + 5; }
    var step = tickStep(hi - lo);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;

    var n = points.length;
    var marks = C.marks(players);
    var longest = Math.max.apply(null, marks.map(function (m) { return Array.from(m).length; }).concat([1]));
    var RIGHT = 10 + longest * MARK_PX;
    var W = Math.max(MIN_W, Math.round(LEFT + RIGHT + Math.max(n - 1, 0) * PX_PER_STEP));
    function x(i) { return n <= 1 ? (LEFT + W - RIGHT) / 2 : LEFT + (W - LEFT - RIGHT) * i / (n - 1); }
    function y(v) { return TOP + (H - TOP - BOTTOM) * (hi - v) / (hi - lo); }

    var wide = W > MIN_W;
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, class: "chart" + (wide ? " wide" : ""), role: "img",
                          "aria-label": C.t("Scores over time") });
    if (wide) { svg.setAttribute("width", W); svg.setAttribute("height", H); }
    for (var v = lo; v <= hi + 1e-9; v += step) {
      svg.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v), class: v === 0 ? "zero" : "grid" }));
      svg.appendChild(el("text", { x: LEFT - 5, y: y(v) + 4, class: "tick", "text-anchor": "end" }, C.number(Math.round(v))));
    }
    if (series.band) {
      series.band.forEach(function (b) {
        svg.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: y(b), y2: y(b), class: "band" }));
      });
    }
    // A round's label only where it has room: the last one always.
    var breaks = series.breaks || [];
    var labelled = -Infinity;
    breaks.forEach(function (b, i) {
      var bx = x(b.at);
      svg.appendChild(el("line", { x1: bx, x2: bx, y1: TOP - 4, y2: H - BOTTOM, class: "break" }));
      var next = i + 1 < breaks.length ? x(breaks[i + 1].at) : Infinity;
      if (bx - labelled >= BREAK_LABEL_PX && (next - bx >= BREAK_LABEL_PX || i === breaks.length - 1)) {
        svg.appendChild(el("text", { x: bx + 3, y: TOP - 3, class: "tick" }, b.label));
        labelled = bx;
      }
    });
    players.forEach(function (name, seat) {
      var d = points.map(function (scores, i) { return x(i).toFixed(1) + "," + y(scores[seat] || 0).toFixed(1); });
      var line = el("polyline", { points: d.join(" "), class: "line s" + (seat % 8) });
      line.appendChild(el("title", {}, name));
      svg.appendChild(line);
      if (n) {
        var last = points[n - 1][seat] || 0;
        svg.appendChild(el("circle", { cx: x(n - 1), cy: y(last), r: 3.5, class: "end s" + (seat % 8) }));
      }
    });
    // The marks at the lines' ends, pushed apart where the lines end close together.
    if (n) {
      var ends = players.map(function (_, seat) { return { seat: seat, y: y(points[n - 1][seat] || 0) + 4 }; })
        .sort(function (a, b) { return a.y - b.y; });
      ends.forEach(function (e, i) { if (i && e.y - ends[i - 1].y < LABEL_GAP) e.y = ends[i - 1].y + LABEL_GAP; });
      var over = ends.length ? ends[ends.length - 1].y - H : 0;
      if (over > 0) ends.forEach(function (e) { e.y -= over; });
      ends.forEach(function (e) {
        svg.appendChild(el("text", { x: x(n - 1) + 7, y: e.y, class: "mark" }, marks[e.seat]));
      });
    }
    return svg;
  };
})();
