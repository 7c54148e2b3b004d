/* /stats: simple horizontal SVG bar charts over the tables the page already
   shows (wins per player; average score per player for each game).  Data
   from the page's boot data (boot.stats, the same object as GET /api/stats). */
(function () {
  "use strict";
  var C = window.Companion;
  var t = C.t;
  var NS = "http://www.w3.org/2000/svg";
  // Each bar under its player's whole name (a phone has no room for names
  // beside the bars, and cut names could read the same).
  var W = 300, ROW = 36, LABEL_H = 16, NUM = 40, PAD = 4;

  function el(tag, attrs, text) {
    var node = document.createElementNS(NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // rows = [{label, value}]; bars grow right from zero (left for negatives).
  function bars(rows, title, format) {
    var lo = 0, hi = 0;
    rows.forEach(function (r) { lo = Math.min(lo, r.value); hi = Math.max(hi, r.value); });
    if (hi === lo) hi = lo + 1;
    var span = W - NUM - PAD;
    function x(v) { return PAD + span * (v - lo) / (hi - lo); }
    var height = rows.length * ROW + PAD;
    var svg = el("svg", { viewBox: "0 0 " + W + " " + height, class: "chart bars", role: "img", "aria-label": title });
    svg.appendChild(el("title", {}, title));
    rows.forEach(function (r, i) {
      var y = PAD + i * ROW;
      var x0 = x(Math.min(0, r.value)), x1 = x(Math.max(0, r.value));
      svg.appendChild(el("text", { x: PAD, y: y + LABEL_H - 3, class: "bar-label" }, r.label));
      svg.appendChild(el("rect", { x: x0, y: y + LABEL_H, width: Math.max(1, x1 - x0), height: ROW - LABEL_H - 6,
                                   class: "bar", fill: "currentColor", "fill-opacity": "0.7" }));
      svg.appendChild(el("text", { x: x1 + 4, y: y + ROW - 9, class: "tick" }, format(r.value)));
    });
    if (lo < 0) {
      svg.appendChild(el("line", { x1: x(0), x2: x(0), y1: 0, y2: height, class: "zero", stroke: "currentColor" }));
    }
    return svg;
  }

  function start(stats) {
    var players = stats.players || [];
    var wins = document.getElementById("wins-chart");
    if (wins) {
      var rows = players.filter(function (p) { return p.played > 0; })
        .map(function (p) { return { label: p.name, value: p.won }; });
      if (rows.length) wins.appendChild(bars(rows, t("Wins"), String));
    }
    Array.prototype.forEach.call(document.querySelectorAll("[data-chart]"), function (node) {
      var game = node.dataset.chart;
      var rows = [];
      players.forEach(function (p) {
        var g = p.games[game];
        if (g && g.average !== null) rows.push({ label: p.name, value: g.average });
      });
      rows.sort(function (a, b) { return b.value - a.value; });
      if (rows.length) {
        node.appendChild(bars(rows, t("Average score"), function (v) { return C.number(Math.round(v * 100) / 100); }));
      }
    });
  }

  // A table wider than the phone says so in words under it, not only by
  // its shadow: "Streak" is not to be missed for being off the edge.
  function sayWhereMoreIs(box) {
    var hint = null;
    function update() {
      var more = box.scrollWidth > box.clientWidth + 1;
      if (more && !hint) {
        hint = C.h("p", { className: "hint scroll-hint more-columns" }, t("More columns: scroll sideways →"));
        box.parentNode.insertBefore(hint, box.nextSibling);
      } else if (!more && hint) {
        hint.remove();
        hint = null;
      }
    }
    if (window.ResizeObserver) new ResizeObserver(update).observe(box);
    else window.addEventListener("resize", update);
    update();
  }

  if (C.boot.page === "stats" && C.boot.stats) start(C.boot.stats);
  if (C.boot.page === "stats") Array.prototype.forEach.call(document.querySelectorAll("main .scroll"), sayWhereMoreIs);
})();
