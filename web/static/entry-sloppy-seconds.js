/* Sloppy Seconds at the table control: a hand either trick by trick (tap
   the cards of each trick in play order from the lead the state names; the
   box tracks the broken suits and the trump) or at once by suit totals
   (per seat and suit, the last seat filled in from the suit's 91 points,
   89 for diamonds with three players).  Once a hand's first trick is in,
   it goes on trick by trick (the box refuses totals then). */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t, H = C.entryKit;
  if (!H) return;

  var SUITS = ["S", "H", "D", "C"];
  var SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
  var RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"];
  var REMOVED = "2D";          // not in the deck with three players (the French seed)

  function suitPoints(suit, seats) { return seats === 3 && suit === "D" ? 89 : 91; }
  function red(suit) { return suit === "H" || suit === "D"; }
  function cardFace(card) { return card.slice(0, -1) + SYMBOL[card.slice(-1)]; }

  // The cards of the hand under way (the history's tricks since the last
  // time no trick was in: a hand scored, or entered by its totals).
  function playedThisHand(steps) {
    var cards = [];
    steps.forEach(function (st) {
      if (st.action.type === "trick") cards = cards.concat(st.action.cards);
      if (!st.state.tricks_played) cards = [];
    });
    return cards;
  }

  // The hand's scores from suit totals, as the box scores them: per suit the
  // highest total strictly below the first scores; below 5 counts as 5.
  function scoreHand(rows) {
    var points = rows.map(function () { return 0; });
    SUITS.forEach(function (suit) {
      var column = rows.map(function (r) { return r[suit]; });
      var top = Math.max.apply(null, column);
      var below = column.filter(function (v) { return v < top; });
      if (!below.length) return;
      var second = Math.max.apply(null, below);
      column.forEach(function (v, seat) { if (v === second) points[seat] += v; });
    });
    return points.map(function (p) { return Math.max(p, 5); });
  }

  function trickEntry(ctx) {
    var s = ctx.s, ui = ctx.ui, n = s.players.length;
    ui.trick = ui.trick || [];
    ui.justPlayed = ctx.fresh ? [] : (ui.justPlayed || []);
    var played = playedThisHand(ctx.steps).concat(ui.justPlayed);
    var order = H.range(n).map(function (i) { return (s.lead + i) % n; });
    ui.trick = ui.trick.filter(function (c) { return played.indexOf(c) < 0; });   // entered meanwhile elsewhere
    function tap(card) {
      var at = ui.trick.indexOf(card);
      if (at >= 0) ui.trick.splice(at, 1);
      else if (ui.trick.length < n) ui.trick.push(card);
      ctx.redraw();
    }
    var slots = h("ol", { className: "trick-slots" }, order.map(function (seat, i) {
      var card = ui.trick[i];
      return h("li", { className: (i === ui.trick.length ? "next" : "") + (card ? " filled" : "") },
        h("span", { className: "who" }, C.dot(seat), " ", s.players[seat], i === 0 ? h("small", null, " " + t("leads")) : null),
        h("span", { className: "card-pick" + (card && red(card.slice(-1)) ? " red" : "") }, card ? cardFace(card) : "\u2014"));
    }));
    var grid = h("div", { className: "card-grid ss", role: "group", "aria-label": t("Cards") }, SUITS.map(function (suit) {
      var mark = suit === s.trump ? h("span", { className: "chip trump" }, t("trump"))
        : suit === s.ineligible ? h("span", { className: "chip" }, t("never trump")) : null;
      return h("div", { className: "suit-block" + (red(suit) ? " red" : "") + (suit === s.trump ? " is-trump" : "") },
        h("div", { className: "suit-name" }, SYMBOL[suit] + " " + suit, mark),
        h("div", { className: "suit-cards" }, RANKS.map(function (rank) {
          var card = rank + suit;
          var at = ui.trick.indexOf(card);
          var gone = played.indexOf(card) >= 0 || (n === 3 && card === REMOVED);
          return h("button", { type: "button", disabled: gone, "aria-pressed": at >= 0 ? "true" : "false",
            dataset: { card: card }, onclick: function () { tap(card); } },
            rank, at >= 0 ? h("sup", null, String(at + 1)) : null);
        })));
    }));
    var ready = ui.trick.length === n;
    return {
      key: H.stable(["tricks", played, ui.trick, s.lead, s.trump, s.ineligible]),
      node: [slots, grid,
        h("button", { type: "button", className: "primary wide", id: "enter-trick", disabled: !ready, onclick: function () {
          var cards = ui.trick.slice();
          ctx.send({ type: "trick", cards: cards }, t("Trick entered.")).then(function (r) {
            if (!r.ok) return;
            ui.trick = [];
            ui.justPlayed = (ui.justPlayed || []).concat(cards);
            ctx.redraw();
          });
        } }, ready ? t("Enter the trick") : t("Tap {n} more cards in play order", { n: n - ui.trick.length })),
        ui.trick.length ? h("button", { type: "button", className: "wide", onclick: function () { ui.trick = []; ctx.redraw(); } },
          t("Clear the trick")) : null]
    };
  }

  function totalsEntry(ctx) {
    var s = ctx.s, ui = ctx.ui, n = s.players.length;
    var last = n - 1;
    if (!ui.totals || ui.totals.length !== n) {
      ui.totals = s.players.map(function () { return { S: null, H: null, D: null, C: null }; });
    }
    var autoCells = {}, checkCells = {};
    var preview = h("p", { className: "hint", id: "hand-preview" });
    var send = h("button", { type: "button", className: "primary wide", id: "enter-hand" }, t("Enter the hand"));

    // The rows as numbers, the last seat's filled in; null if anything is wrong.
    function rows() {
      var ok = true;
      var out = s.players.map(function () { return {}; });
      SUITS.forEach(function (suit) {
        var want = suitPoints(suit, n), sum = 0;
        for (var seat = 0; seat < last; seat++) {
          var v = ui.totals[seat][suit];
          if (v === null) v = 0;
          if (isNaN(v) || v < 0 || v > want) ok = false;
          out[seat][suit] = v;
          sum += isNaN(v) ? 0 : v;
        }
        out[last][suit] = want - sum;
        var good = sum <= want && !isNaN(sum);
        if (!good) ok = false;
        autoCells[suit].textContent = good ? String(want - sum) : "\u2212";
        checkCells[suit].textContent = good ? want + " \u2713" : t("{sum} > {want}", { sum: sum, want: want });
        checkCells[suit].className = "num " + (good ? "good" : "bad");
      });
      return ok ? out : null;
    }
    function update() {
      var r = rows();
      var typed = ui.totals.some(function (row) { return SUITS.some(function (suit) { return row[suit] !== null; }); });
      send.disabled = !r || !typed;
      C.replace(preview, r ? t("This hand scores: {scores}", { scores: scoreHand(r).map(function (p, seat) {
        return s.players[seat] + " " + p;
      }).join(" \u00B7 ") }) : t("Each suit's totals must add up to its points."));
    }
    SUITS.forEach(function (suit) {
      autoCells[suit] = h("output", { className: "auto", id: "auto-" + suit });
      checkCells[suit] = h("td", { className: "num" });
    });
    var table = h("table", { className: "totals" },
      h("thead", null, h("tr", null, h("th", null, t("Player")), SUITS.map(function (suit) {
        return h("th", { className: "num" + (red(suit) ? " red" : "") }, SYMBOL[suit] + " " + suit);
      }))),
      h("tbody", null, s.players.map(function (name, seat) {
        return h("tr", null, h("th", { scope: "row" }, C.dot(seat), " ", name), SUITS.map(function (suit) {
          if (seat === last) return h("td", { className: "num" }, autoCells[suit]);
          return h("td", null, H.number("total-" + seat + "-" + suit, ui.totals[seat][suit], function (v) {
            ui.totals[seat][suit] = v;
            update();
          }, { label: name + " " + suit, placeholder: "0" }));
        }));
      })),
      h("tfoot", null, h("tr", null, h("th", { scope: "row" }, t("Check")), SUITS.map(function (suit) { return checkCells[suit]; }))));
    send.onclick = function () {
      var r = rows();
      if (!r) return;
      ctx.send({ type: "hand", points: r }, t("Hand entered.")).then(function (res) {
        if (res.ok) { ui.totals = null; ctx.redraw(); }
      });
    };
    update();
    return {
      key: H.stable(["totals", s.hands.length, s.dealer]),
      node: [h("p", { className: "hint" }, t("Card points taken per suit; the last row is what is left of each suit.")),
        h("div", { className: "scroll" }, table), preview, send]
    };
  }

  C.entries["sloppy-seconds"] = function (ctx) {
    var s = ctx.s, ui = ctx.ui;
    var started = s.tricks_played > 0;
    if (started || !ui.mode) ui.mode = "tricks";
    var part = ui.mode === "tricks" ? trickEntry(ctx) : totalsEntry(ctx);
    var last = s.last_trick ? H.boardSection(s, t("Last trick")) : null;
    return {
      key: ui.mode + started + H.stable(s.last_trick) + part.key,
      node: [H.tabs([{ value: "tricks", label: t("Trick by trick"), id: "mode-tricks" },
        { value: "totals", label: t("Suit totals"), id: "mode-totals", disabled: started }],
        ui.mode, function (mode) { ui.mode = mode; ctx.redraw(); }), last, part.node]
    };
  };
})();
