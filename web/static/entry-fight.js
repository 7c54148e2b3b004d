/* FIGHT? at the table control: the seat to play taps the coin it plays,
   then its change; the box's list of legal changes (GET
   /api/fight/changes, largest worth first) comes with the largest one
   already picked, as on the box.  "Hint" asks the box's solver
   (GET /api/fight/hint): perfect play with two players holding coins, a
   labelled "team-up" heuristic with more, or no hint and why. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t, H = C.entryKit;
  if (!H) return;

  var SHOWN = 6;          // changes listed before "Show all"

  function changeText(take) {
    if (!take.length) return t("no change");
    var worth = take.reduce(function (a, b) { return a + b; }, 0);
    return take.length === 1 ? String(worth) : take.join(" + ") + " = " + worth;
  }

  function coinsOf(purse) {
    return Object.keys(purse).map(Number).sort(function (a, b) { return b - a; })
      .filter(function (v) { return purse[v] > 0; });
  }

  C.entries.fight = function (ctx) {
    var s = ctx.s, ui = ctx.ui;
    var seat = s.turn;
    var position = H.stable([s.turn, s.coins, s.table]);
    if (ui.position !== position) {             // a new turn: start over
      ui.position = position;
      ui.coin = null; ui.changes = null; ui.pick = 0; ui.all = false; ui.hint = null; ui.asking = false;
    }
    var name = s.players[seat];

    function pickCoin(value) {
      ui.coin = value; ui.changes = null; ui.pick = 0; ui.all = false;
      ctx.redraw();
      var asked = ui.position;
      C.api("GET", "/api/fight/changes?play=" + value).then(function (r) {
        if (ui.position !== asked || ui.coin !== value) return;      // the table moved on
        ui.changes = r.ok ? r.body.changes : [];
        ui.changesError = r.ok ? null : r.error;
        ctx.redraw();
      });
    }

    function askHint() {
      ui.asking = true; ui.hint = null;
      ctx.redraw();
      var asked = ui.position;
      C.api("GET", "/api/fight/hint").then(function (r) {
        if (ui.position !== asked) return;
        ui.asking = false;
        ui.hint = r.ok ? r.body : { play: null, reason: r.error };
        ctx.redraw();
      });
    }

    function play(coin, take) {
      ctx.send({ type: "turn", seat: seat, play: coin, take: take },
        t("{name} plays {coin}", { name: name, coin: coin }));
    }

    var coins = h("div", null,
      h("p", { className: "prompt" }, t("{name}: which coin?", { name: name })),
      H.choice(coinsOf(s.coins[seat]).map(function (v) {
        return { value: v, label: String(v), sub: "\u00D7" + s.coins[seat][v], data: { coin: String(v) } };
      }), ui.coin, pickCoin, "coins", t("Coins")));

    var change = null;
    if (ui.coin !== null) {
      if (ui.changes === null) change = h("p", { className: "muted" }, t("Sending…"));
      else if (ui.changesError) change = h("p", { className: "msg error" }, ui.changesError);
      else {
        var list = ui.all ? ui.changes : ui.changes.slice(0, SHOWN);
        if (ui.pick >= list.length) list = ui.changes;
        change = h("div", null,
          h("p", { className: "prompt" }, t("Change from the table (at most {max}):", { max: ui.coin - 1 })),
          H.choice(list.map(function (take, i) {
            return { value: i, label: changeText(take), data: { change: take.join("+") } };
          }), ui.pick, function (i) { ui.pick = i; ctx.redraw(); }, "changes"),
          !ui.all && ui.changes.length > SHOWN ? h("button", { type: "button", className: "link", onclick: function () {
            ui.all = true; ctx.redraw();
          } }, t("Show all ({n})", { n: ui.changes.length })) : null,
          h("button", { type: "button", className: "primary wide", id: "enter-turn", onclick: function () {
            play(ui.coin, ui.changes[ui.pick]);
          } }, t("{name} plays {coin}, takes {take}", { name: name, coin: ui.coin, take: changeText(ui.changes[ui.pick]) })));
      }
    }

    var hint;
    if (ui.asking) hint = h("p", { className: "muted", id: "hint-box" }, t("Thinking…"));
    else if (ui.hint) {
      var move = ui.hint.play === null ? null : t("Play {coin}, take {take}", { coin: ui.hint.play, take: changeText(ui.hint.take) });
      hint = h("div", { className: "hint-box", id: "hint-box" },
        move ? h("p", { className: "big" }, move) : null,
        h("p", { className: ui.hint.exact ? null : "muted" }, ui.hint.reason),
        move ? h("button", { type: "button", className: "wide", id: "play-hint", onclick: function () {
          play(ui.hint.play, ui.hint.take);
        } }, t("Play the hint")) : null);
    } else {
      hint = h("button", { type: "button", className: "wide", id: "ask-hint", onclick: askHint }, t("Hint"));
    }

    return {
      key: H.stable([position, ui.coin, ui.changes, ui.changesError, ui.pick, ui.all, ui.hint, ui.asking]),
      node: [coins, change, hint]
    };
  };
})();
