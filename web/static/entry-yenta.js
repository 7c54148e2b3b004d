/* Yenta at the table control: the auction's winning bid (seat + amount);
   then the player to play asks another player who still has dice for a
   value, hit or miss, or passes; when one player alone has dice left, its
   last dice.  Whose turn it is comes from the state: the box moves it on. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t, H = C.entryKit;
  if (!H) return;

  var FACES = ["\u2680", "\u2681", "\u2682", "\u2683", "\u2684", "\u2685"];

  function dieButtons(picked, onPick) {
    return H.choice([1, 2, 3, 4, 5, 6].map(function (v) {
      return { value: v, label: String(v), sub: FACES[v - 1], data: { value: String(v) } };
    }), picked, onPick, "dice", t("Dice"));
  }

  function bidEntry(ctx) {
    var s = ctx.s, ui = ctx.ui;
    var amount = H.number("bid-amount", ui.amount, function (v) { ui.amount = v; }, { label: t("Bid") });
    return {
      key: H.stable(["bid", s.hands.length, ui.bidder]),
      node: [h("p", { className: "prompt" }, t("Who won the auction?")),
        H.choice(s.players.map(function (p, seat) {
          return { value: seat, label: p, data: { seat: String(seat) } };
        }), ui.bidder, function (seat) { ui.bidder = seat; ctx.redraw(); }, "seats"),
        h("label", { for: "bid-amount" }, t("Bid")), amount,
        h("button", { type: "button", className: "primary wide", id: "enter-bid", onclick: function () {
          if (ui.bidder === undefined || ui.bidder === null) return;
          if (ui.amount === null || ui.amount === undefined || isNaN(ui.amount)) { amount.focus(); return; }
          ctx.send({ type: "bid", seat: ui.bidder, amount: ui.amount },
            t("{name} bids {amount}", { name: s.players[ui.bidder], amount: ui.amount }))
            .then(H.emptyAfter(ctx, { bidder: null, amount: null }));
        } }, t("Enter the bid"))]
    };
  }

  function askEntry(ctx) {
    var s = ctx.s, ui = ctx.ui, seat = s.turn, name = s.players[seat];
    var targets = s.players.map(function (p, i) { return i; }).filter(function (i) { return i !== seat && s.dice[i] > 0; });
    if (targets.indexOf(ui.target) < 0) ui.target = targets.length === 1 ? targets[0] : null;
    var ready = ui.target !== null && ui.value;
    function ask(hit) {
      var action = { type: "ask", seat: seat, target: ui.target, value: ui.value, hit: hit };
      var text = t(hit ? "{name} asks {target} for {value}: hit" : "{name} asks {target} for {value}: miss",
        { name: name, target: s.players[ui.target], value: ui.value });
      ctx.send(action, text).then(H.emptyAfter(ctx, { value: null }));
    }
    return {
      key: H.stable(["ask", seat, s.dice, ui.target, ui.value]),
      node: [h("p", { className: "prompt" }, t("{name} asks…", { name: name })),
        h("label", null, t("Whom")),
        H.choice(targets.map(function (i) {
          return { value: i, label: s.players[i], sub: t("{n} dice", { n: s.dice[i] }), data: { seat: String(i) } };
        }), ui.target, function (i) { ui.target = i; ctx.redraw(); }, "seats"),
        h("label", null, t("For a")),
        dieButtons(ui.value, function (v) { ui.value = v; ctx.redraw(); }),
        h("div", { className: "row" },
          h("button", { type: "button", className: "primary", id: "ask-hit", disabled: !ready, onclick: function () { ask(true); } }, t("Hit")),
          h("button", { type: "button", className: "primary", id: "ask-miss", disabled: !ready, onclick: function () { ask(false); } }, t("Miss"))),
        h("button", { type: "button", className: "wide", id: "pass", onclick: function () {
          ctx.send({ type: "pass", seat: seat }, t("{name} passes", { name: name }));
        } }, t("{name} passes", { name: name }))]
    };
  }

  function lastEntry(ctx, seat) {
    var s = ctx.s, ui = ctx.ui, name = s.players[seat], count = s.dice[seat];
    if (ui.lastFor !== seat + ":" + count) { ui.lastFor = seat + ":" + count; ui.dice = []; }
    var full = ui.dice.length === count;
    return {
      key: H.stable(["last", seat, count, ui.dice]),
      node: [h("p", { className: "prompt" }, t("{name} alone has dice left: tap its {n} dice", { name: name, n: count })),
        H.choice([1, 2, 3, 4, 5, 6].map(function (v) {
          return { value: v, label: String(v), sub: FACES[v - 1], disabled: full, data: { value: String(v) } };
        }), null, function (v) { if (ui.dice.length < count) { ui.dice.push(v); ctx.redraw(); } }, "dice"),
        h("p", { className: "big", id: "last-dice" }, ui.dice.length ? ui.dice.join(" + ") : "\u2014"),
        ui.dice.length ? h("button", { type: "button", className: "wide", onclick: function () { ui.dice.pop(); ctx.redraw(); } },
          t("Take back the last die")) : null,
        h("button", { type: "button", className: "primary wide", id: "enter-last", disabled: !full, onclick: function () {
          ctx.send({ type: "last", seat: seat, dice: ui.dice.slice() },
            t("{name}'s last dice: {dice}", { name: name, dice: ui.dice.join(", ") }));
        } }, t("Enter the last dice"))]
    };
  }

  C.entries.yenta = function (ctx) {
    var s = ctx.s;
    if (s.bid === null) return bidEntry(ctx);
    var holding = s.dice.map(function (n, seat) { return n > 0 ? seat : -1; }).filter(function (seat) { return seat >= 0; });
    if (holding.length === 1) return lastEntry(ctx, holding[0]);
    return askEntry(ctx);
  };
})();
