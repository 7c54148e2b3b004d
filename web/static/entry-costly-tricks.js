/* Costly Tricks at the table control: the deal (who holds the red 0),
   then each trick either by its four cards (tapped in play order from a
   suit x 0..10 grid; the box's judge finds the winner and says why) or
   quick (winner seat + points).

   Suits are the table's own names (strings in the log, compared exactly).
   The grid's four rows: the names given here for this match ("Suit
   names"), else the names the match has already used (read from its
   history, so every phone agrees), else those this phone was given
   before, else red, blue, black, green (the seed's example uses red, blue
   and black; the fourth is not named there).  A suit already played this
   hand always keeps its row: renaming it would make a fifth suit. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t, H = C.entryKit;
  if (!H) return;

  var SEATS = 4, TRICKS = 11, HAND_POINTS = 220;
  var SAVED = "companion.costly-tricks.suits";

  function defaults() { return [t("red"), t("blue"), t("black"), t("green")]; }

  function seatLabel(s, seat) {
    return seat < 2 ? s.players[seat] : t("{name}'s dummy", { name: s.players[seat - 2] });
  }

  function cardText(card) { return card[0] + " " + card[1]; }
  function same(a, b) { return a[0] === b[0] && a[1] === b[1]; }

  // The full-entry cards of the hand under way (since the latest deal), and
  // every suit name the match has used, first seen first.
  function fromHistory(steps) {
    var hand = [], suits = [];
    steps.forEach(function (st) {
      if (st.action.type === "deal") hand = [];
      if (st.action.type === "trick" && st.action.cards) {
        st.action.cards.forEach(function (card) {
          hand.push(card);
          if (suits.indexOf(card[0]) < 0) suits.push(card[0]);
        });
      }
    });
    return { hand: hand, suits: suits };
  }

  function saved() {
    try {
      var list = JSON.parse(window.localStorage.getItem(SAVED) || "null");
      return Array.isArray(list) ? list.filter(function (n) { return typeof n === "string" && n.trim(); }) : [];
    } catch (e) { return []; }
  }

  // Four suit names, those of this hand always among them: the names given
  // on this page for this match, else the match's own (its history), else
  // the names this phone was given before, else the usual ones.
  function suitNames(handSuits, matchSuits, given) {
    var names = [];
    function add(n) { if (names.indexOf(n) < 0) names.push(n); }
    (given || []).forEach(add);
    matchSuits.forEach(add);
    saved().forEach(add);
    defaults().forEach(add);
    names = names.slice(0, SEATS);
    handSuits.forEach(function (suit) {
      if (names.indexOf(suit) >= 0) return;
      // replace the last name this hand has not used
      for (var i = names.length - 1; i >= 0; i--) {
        if (handSuits.indexOf(names[i]) < 0) { names[i] = suit; return; }
      }
    });
    return names;
  }

  // A colour swatch for the names players usually give (in the page's language).
  function swatch(name) {
    var known = { red: t("red"), blue: t("blue"), black: t("black"), green: t("green"), yellow: t("yellow"), purple: t("purple") };
    var lower = String(name).toLowerCase();
    for (var key in known) {
      if (known[key].toLowerCase() === lower || key === lower) return "suit-" + key;
    }
    return "suit-other";
  }

  function deal(ctx) {
    var s = ctx.s;
    return { key: "deal", node: [
      h("p", { className: "prompt" }, t("Who has the red 0? That seat leads the first trick.")),
      H.choice(H.range(SEATS).map(function (seat) {
        return { value: seat, label: seatLabel(s, seat), data: { seat: String(seat) } };
      }), null, function (seat) {
        ctx.send({ type: "deal", lead: seat }, t("Dealt: {seat} leads.", { seat: seatLabel(s, seat) }));
      }, "seats deal")] };
  }

  function cardsEntry(ctx, history) {
    var s = ctx.s, ui = ctx.ui;
    ui.trick = ui.trick || [];
    ui.justPlayed = ctx.fresh ? [] : (ui.justPlayed || []);
    var played = history.hand.concat(ui.justPlayed);
    var handSuits = [];
    played.forEach(function (c) { if (handSuits.indexOf(c[0]) < 0) handSuits.push(c[0]); });
    var names = suitNames(handSuits, history.suits, ui.names);
    var order = H.range(SEATS).map(function (i) { return (s.lead + i) % SEATS; });

    function isPlayed(card) { return played.some(function (p) { return same(p, card); }); }
    // a card tapped here but entered meanwhile (another phone), or of a renamed suit, goes
    ui.trick = ui.trick.filter(function (c) { return !isPlayed(c) && names.indexOf(c[0]) >= 0; });
    function position(card) {
      for (var i = 0; i < ui.trick.length; i++) if (same(ui.trick[i], card)) return i;
      return -1;
    }
    function tap(card) {
      var at = position(card);
      if (at >= 0) ui.trick.splice(at, 1);               // a second tap takes it back
      else if (ui.trick.length < SEATS) ui.trick.push(card);
      ctx.redraw();
    }

    var slots = h("ol", { className: "trick-slots" }, order.map(function (seat, i) {
      var card = ui.trick[i];
      return h("li", { className: (i === ui.trick.length ? "next" : "") + (card ? " filled" : "") },
        h("span", { className: "who" }, seatLabel(s, seat)),
        h("span", { className: "card-pick " + (card ? swatch(card[0]) : "") }, card ? cardText(card) : "\u2014"));
    }));

    var grid = h("div", { className: "card-grid ct", role: "group", "aria-label": t("Cards") }, names.map(function (suit) {
      return h("div", { className: "suit-block " + swatch(suit) },
        h("div", { className: "suit-name" }, suit),
        h("div", { className: "suit-cards" }, H.range(11).map(function (v) {
          var card = [suit, v];
          var at = position(card);
          var gone = isPlayed(card);
          return h("button", { type: "button", disabled: gone, "aria-pressed": at >= 0 ? "true" : "false",
            dataset: { suit: suit, value: String(v) }, title: cardText(card) + (gone ? " \u00B7 " + t("played") : ""),
            onclick: function () { tap(card); } }, String(v), at >= 0 ? h("sup", null, String(at + 1)) : null);
        })));
    }));

    var ready = ui.trick.length === SEATS;
    var confirm = h("button", { type: "button", className: "primary wide", id: "enter-trick", disabled: !ready,
      onclick: function () {
        var cards = ui.trick.slice();
        ctx.send({ type: "trick", cards: cards }, t("Trick entered.")).then(function (r) {
          if (!r.ok) return;
          ui.trick = [];
          ui.justPlayed = (ui.justPlayed || []).concat(cards);
          ctx.redraw();
        });
      } }, ready ? t("Enter the trick") : t("Tap {n} more cards in play order", { n: SEATS - ui.trick.length }));
    var clear = ui.trick.length ? h("button", { type: "button", className: "wide", id: "clear-trick",
      onclick: function () { ui.trick = []; ctx.redraw(); } }, t("Clear the trick")) : null;

    return {
      key: H.stable([played, names, ui.trick, s.lead]),
      node: [slots, grid, confirm, clear, namesEditor(ctx, names, handSuits)]
    };
  }

  // Naming the suits: once per match, before they are used (a suit used this
  // hand keeps its name until the next deal).
  function namesEditor(ctx, names, handSuits) {
    var inputs = names.map(function (name, i) {
      return h("input", { type: "text", maxlength: "24", value: name, id: "suit-name-" + i,
        "aria-label": t("Suit {n}", { n: i + 1 }), disabled: handSuits.indexOf(name) >= 0 });
    });
    var msg = h("p", { className: "msg", hidden: true });
    return h("details", { className: "suit-names", open: ctx.ui.namesOpen ? true : null,
      ontoggle: function () { ctx.ui.namesOpen = this.open; } },
      h("summary", null, t("Suit names")),
      h("p", { className: "hint" }, t("The names the log uses for the four suits. A suit already played this hand keeps its name.")),
      h("div", { className: "suit-inputs" }, inputs),
      h("button", { type: "button", className: "wide", onclick: function () {
        var list = inputs.map(function (input) { return input.value.trim(); });
        if (list.some(function (n) { return !n; }) || new Set(list).size !== list.length) {
          C.message(msg, t("Give four different names."), "error");
          return;
        }
        try { window.localStorage.setItem(SAVED, JSON.stringify(list)); } catch (e) { /* private mode */ }
        ctx.ui.names = list;
        ctx.ui.namesOpen = false;
        ctx.redraw();
      } }, t("Use these names")), msg);
  }

  function quickEntry(ctx) {
    var s = ctx.s, ui = ctx.ui;
    var taken = s.scores[0] + 20 * s.tricks[0] + s.scores[1] + 20 * s.tricks[1];
    var number = s.tricks[0] + s.tricks[1] + 1;
    var left = HAND_POINTS - taken;
    var last = number === TRICKS;
    if (ui.quickWinner === undefined || ui.quickFor !== number) {
      ui.quickWinner = s.lead;            // the box's default: the seat that leads
      ui.quickPoints = last ? left : null;
      ui.quickFor = number;
    }
    var check = h("p", { className: "hint", id: "quick-check" });
    function showCheck() {
      var p = ui.quickPoints;
      if (p === null) C.replace(check, t("Trick {n} of 11 · {left} points still out", { n: number, left: left }));
      else if (isNaN(p) || p < 0 || p > 40) { C.replace(check, t("A trick holds 0 to 40 points.")); check.className = "hint bad"; return; }
      else if (p > left) { C.replace(check, t("Only {left} points are still out.", { left: left })); check.className = "hint bad"; return; }
      else C.replace(check, t("Trick {n} of 11 · {left} points still out", { n: number, left: left }));
      check.className = "hint";
    }
    showCheck();
    var points = H.number("quick-points", ui.quickPoints, function (v) { ui.quickPoints = v; showCheck(); },
      { readonly: last, label: t("Points") });
    return {
      key: H.stable(["quick", number, left, s.lead, ui.quickWinner, last]),
      node: [
        h("label", null, t("Won by")),
        H.choice(H.range(SEATS).map(function (seat) {
          return { value: seat, label: seatLabel(s, seat), data: { seat: String(seat) } };
        }), ui.quickWinner, function (seat) { ui.quickWinner = seat; ctx.redraw(); }, "seats"),
        h("label", { for: "quick-points" }, t("Points"), last ? h("span", { className: "hint" }, " (" + t("the last trick takes what is left") + ")") : null),
        points, check,
        h("button", { type: "button", className: "primary wide", id: "enter-quick", onclick: function () {
          var p = ui.quickPoints;
          if (p === null || isNaN(p)) { showCheck(); points.focus(); return; }
          ctx.send({ type: "trick", winner: ui.quickWinner, points: p }, t("Trick entered."))
            .then(H.emptyAfter(ctx, { quickFor: null, quickWinner: undefined, quickPoints: null }));
        } }, t("Enter the trick"))]
    };
  }

  C.entries["costly-tricks"] = function (ctx) {
    var s = ctx.s, ui = ctx.ui;
    var reasoning = s.last_trick ? H.boardSection(s, t("Last trick")) : null;
    if (s.lead === null) {
      var d = deal(ctx);
      return { key: d.key + H.stable(s.last_trick), node: [reasoning, d.node] };
    }
    var history = fromHistory(ctx.steps);
    ui.mode = ui.mode || "cards";
    var part = ui.mode === "cards" ? cardsEntry(ctx, history) : quickEntry(ctx);
    return {
      key: ui.mode + H.stable(s.last_trick) + part.key,
      node: [
        H.tabs([{ value: "cards", label: t("By cards"), id: "mode-cards" }, { value: "quick", label: t("Quick"), id: "mode-quick" }],
          ui.mode, function (mode) { ui.mode = mode; ctx.redraw(); }),
        reasoning, part.node]
    };
  };
})();
