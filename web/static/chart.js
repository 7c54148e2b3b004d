/* Scores over time as an inline SVG line chart, one line per seat.

   Companion.chart(series, players) -> <svg>
   series = {points: [[score per seat], ...],          one entry per step
             breaks: [{at: index, label: "R2"}, ...],  a new round/hand starts at index
             band: [lo, hi] or null}                    dashed guide lines (Third Man's ±20)
   Colours come from the CSS classes s0..s7 (the same as the seat dots). */
(function () {
  "use strict";
  var C = window.Companion;
  var NS = "http://www.w3.org/2000/svg";
  var W = 360, H = 190, LEFT = 36, RIGHT = 10, TOP = 14, BOTTOM = 10;

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
    function x(i) { return n <= 1 ? (LEFT + W - RIGHT) / 2 : LEFT + (W - LEFT - RIGHT) * i / (n - 1); }
    function y(v) { return TOP + (H - TOP - BOTTOM) * (hi - v) / (hi - lo); }

    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, class: "chart", role: "img",
                          "aria-label": C.t("Scores over time") });
    for (var v = lo; v <= hi + 1e-9; v += step) {
      svg.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v), class: v === 0 ? "zero" : "grid" }));
      svg.appendChild(el("text", { x: LEFT - 5, y: y(v) + 4, class: "tick", "text-anchor": "end" }, C.number(Math.round(v))));
    }
    if (series.band) {
      series.band.forEach(function (b) {
        svg.appendChild(el("line", { x1: LEFT, x2: W - RIGHT, y1: y(b), y2: y(b), class: "band" }));
      });
    }
    (series.breaks || []).forEach(function (b) {
      var bx = x(b.at);
      svg.appendChild(el("line", { x1: bx, x2: bx, y1: TOP - 4, y2: H - BOTTOM, class: "break" }));
      svg.appendChild(el("text", { x: bx + 3, y: TOP - 3, class: "tick" }, b.label));
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
    return svg;
  };
})();
