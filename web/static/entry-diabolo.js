/* Diabolo at the table control: score a colour (the colour, every seat's
   hand sum in it, the row's heaven and hell sums) and, optionally, track
   the rows card by card (``place``: the seat to place, the rows and the
   game's colours come with the state).

   The doubles are secret decisions that each seat enters on its own seat
   page or on the box: the score leaves ``doubles`` out, and the box takes
   the decisions entered for that colour.  A table that plays the seed's
   way (doubles announced aloud) can tick them here instead, when nobody
   has entered a secret decision for the colour. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t, H = C.entryKit;
  if (!H) return;

  var COLOURS = 5, ROW = 5, SIDE = 3, HAND_MAX = 70;

  // The box's usual names (hardware/ui/diabolo.py), as ids: stored as "red"
  // whatever the phone's language, and shown in it (C.colour).
  function defaults() { return ["red", "blue", "green", "yellow", "purple"]; }

  // The game's colours (the first five named), the rows placed this round
  // and the seat to place: from the state where it says them (its `colors`,
  // `rows` and `turn`), else read from the history.
  function tableOf(s, steps) {
    if (Array.isArray(s.colors) && Array.isArray(s.rows) && typeof s.turn === "number") {
      return { used: s.colors.slice(), rows: s.rows, turn: s.turn };
    }
    var info = fromHistory(s, steps);
    var placed = info.rows.reduce(function (a, r) { return a + r.heaven.length + r.hell.length; }, 0);
    info.turn = (s.dealer + 1 + placed) % s.players.length;
    return info;
  }

  function fromHistory(s, steps) {
    var colours = [], rows = [], round = null;
    function named(c) { if (typeof c === "string" && colours.indexOf(c) < 0) colours.push(c); }
    steps.forEach(function (st) {
      if (st.state.round !== round) { round = st.state.round; rows = []; }
      var a = st.action;
      named(a.color);
      if (a.type === "place" && round === s.round) {
        var row = rows.filter(function (r) { return r.color === a.color; })[0];
        if (!row) rows.push(row = { color: a.color, heaven: [], hell: [] });
        row[a.side].push(a.value);
      }
    });
    if (round !== s.round) rows = [];
    s.scored.forEach(named);
    if (s.decided) named(s.decided.color);
    return { used: colours, rows: rows };
  }

  // The colours to offer: the game's, then one this phone named, then the
  // usual ones the game has not used yet under any language's name.
  function colourList(used, extra) {
    var all = used.slice(0, COLOURS);
    if (extra && all.indexOf(extra) < 0 && all.length < COLOURS) all.push(extra);
    defaults().forEach(function (c) {
      var named = all.some(function (x) { return x === c || C.colourId(x) === c; });
      if (all.length < COLOURS && !named) all.push(c);
    });
    return all;
  }

  function sum(list) { return list.reduce(function (a, b) { return a + b; }, 0); }
  function rowOf(rows, colour) {
    return rows.filter(function (r) { return r.color === colour; })[0] || { color: colour, heaven: [], hell: [] };
  }
  function sideText(cards) { return cards.length ? cards.join(" ") + " = " + sum(cards) : "\u2013"; }
  function closed(row) { return row.heaven.length + row.hell.length >= ROW; }
  function playEnded(rows, n) { return rows.filter(closed).length >= (n === 5 ? 3 : 2); }

  function scoreEntry(ctx, info) {
    var s = ctx.s, ui = ctx.ui, n = s.players.length;
    var open = info.colours.filter(function (c) { return s.scored.indexOf(c) < 0; });
    if (s.decided) open = [s.decided.color];            // its secret decisions await this score
    if (open.indexOf(ui.color) < 0) ui.color = open.length === 1 ? open[0] : null;
    if (!ui.hands || ui.hands.length !== n) ui.hands = s.players.map(function () { return null; });
    var tracked = info.rows.length > 0;
    var row = rowOf(info.rows, ui.color);
    var secret = s.decided && s.decided.color === ui.color ? s.decided.seats : [];
    ui.open = (ui.open || []).filter(function (seat) { return s.doubles_left[seat]; });

    var preview = h("p", { className: "hint", id: "score-preview" });
    function sides() {
      return tracked ? [sum(row.heaven), sum(row.hell)] : [ui.heaven, ui.hell];
    }
    // Who takes the colour, as the box will score it (the doubles aside).
    function update() {
      var hs = sides(), bad = ui.hands.some(function (v) { return v !== null && (isNaN(v) || v > HAND_MAX); });
      if (!ui.color || hs[0] === null || hs[1] === null || hs[0] === undefined || hs[1] === undefined || isNaN(hs[0]) || isNaN(hs[1]) || bad) {
        C.replace(preview, t("Name the colour, then every hand sum and both sides of the row."));
        return;
      }
      var order = H.range(n).map(function (i) { return (s.dealer + 1 + i) % n; });
      var top = order[0];
      order.forEach(function (seat) { if ((ui.hands[seat] || 0) > (ui.hands[top] || 0)) top = seat; });
      var points = ui.hands[top] || 0;
      // Secret-blind: a colour with secret decisions must score positive,
      // whatever they say; the table takes them back with undo otherwise.
      if (secret.length && hs[0] <= hs[1]) C.replace(preview, t("{color} has secret double decisions: it must score positive (undo them first).", { color: C.colour(ui.color) }));
      else if (hs[0] > hs[1]) C.replace(preview, t("{name} takes {color}: {points}", { name: s.players[top], color: C.colour(ui.color), points: C.signed(points) }),
        secret.length || ui.open.length ? " " + t("(doubled if played)") : "");
      else if (hs[1] > hs[0]) C.replace(preview, t("{name} takes {color}: {points}", { name: s.players[top], color: C.colour(ui.color), points: C.signed(-points) }));
      else C.replace(preview, t("Heaven equals hell: nobody scores {color}.", { color: C.colour(ui.color) }));
    }

    var node = [
      h("label", null, t("Colour")),
      open.length ? H.choice(open.map(function (c) { return { value: c, label: C.colour(c), data: { color: c } }; }),
        ui.color, function (c) { ui.color = c; ctx.redraw(); }, "colours") : null,
      !s.decided ? h("details", { className: "other-colour" }, h("summary", null, t("Another name")),
        h("div", { className: "row" },
          h("input", { type: "text", id: "colour-name", maxlength: "24", "aria-label": t("Colour") }),
          h("button", { type: "button", className: "fixed", onclick: function () {
            var name = document.getElementById("colour-name").value.trim();
            if (name) { ui.extra = ui.color = C.colourValue(name, info.used); ctx.redraw(); }
          } }, t("Use")))) : null,
      h("label", null, t("Hand sums in {color}", { color: ui.color ? C.colour(ui.color) : "\u2026" })),
      h("div", { className: "hand-sums" }, s.players.map(function (name, seat) {
        return h("label", { className: "inline" }, h("span", { className: "who" }, C.dot(seat), " ", name),
          H.number("hand-" + seat, ui.hands[seat], function (v) { ui.hands[seat] = v; update(); }, { placeholder: "0" }));
      })),
      tracked
        ? h("p", null, ui.color ? t("Row tracked: heaven {heaven}, hell {hell}", { heaven: sum(row.heaven), hell: sum(row.hell) })
          : t("Heaven and hell come from the tracked rows."))
        : h("div", { className: "row sides" },
            h("label", null, t("heaven"), H.number("heaven", ui.heaven, function (v) { ui.heaven = v; update(); })),
            h("label", null, t("hell"), H.number("hell", ui.hell, function (v) { ui.hell = v; update(); }))),
      secret.length
        ? h("p", { className: "entered" }, t("Secret double decisions entered: {names}. This score reveals them.", { names: C.names(s, secret) }))
        : h("details", { className: "open-doubles", open: ui.open.length ? true : null },
            h("summary", null, t("Doubles announced aloud")),
            h("p", { className: "hint" }, t("Only if the table announces doubles instead of entering them secretly on the seat pages or the box.")),
            H.choice(s.players.map(function (name, seat) {
              return { value: seat, label: name, disabled: !s.doubles_left[seat], pressed: ui.open.indexOf(seat) >= 0,
                data: { seat: String(seat) } };
            }), null, function (seat) {
              var at = ui.open.indexOf(seat);
              if (at >= 0) ui.open.splice(at, 1); else ui.open.push(seat);
              ctx.redraw();
            }, "seats multi")),
      preview,
      h("button", { type: "button", className: "primary wide", id: "enter-score", onclick: function () {
        var hs = sides();
        if (!ui.color) { C.replace(preview, t("Name the colour being scored.")); return; }
        var action = { type: "score", color: ui.color, hands: ui.hands.map(function (v) { return v === null ? 0 : v; }) };
        if (!tracked) { action.heaven = hs[0]; action.hell = hs[1]; }
        if (!secret.length && ui.open.length) action.doubles = ui.open.slice().sort();
        ctx.send(action, t("{color} scored", { color: C.colour(ui.color) }))
          .then(H.emptyAfter(ctx, { hands: null, heaven: null, hell: null, open: [], color: null }));
      } }, t("Score {color}", { color: ui.color ? C.colour(ui.color) : "\u2026" }))];
    update();
    return { key: H.stable(["score", s.round, s.scored, s.decided, s.doubles_left, open, tracked, row, ui.color, ui.open]), node: node };
  }

  function placeEntry(ctx, info) {
    var s = ctx.s, ui = ctx.ui, n = s.players.length;
    var turn = info.turn;
    var ended = playEnded(info.rows, n);
    ui.side = ui.side || "heaven";
    var table = info.rows.length ? h("table", { className: "grid rows" },
      h("thead", null, h("tr", null, h("th", null, t("Colour")), h("th", { className: "num" }, t("heaven")), h("th", { className: "num" }, t("hell")))),
      h("tbody", null, info.rows.map(function (r) {
        return h("tr", { className: closed(r) ? "closed" : null }, h("th", { scope: "row" }, C.colour(r.color), closed(r) ? " \u2713" : ""),
          h("td", { className: "num" }, sideText(r.heaven)), h("td", { className: "num" }, sideText(r.hell)));
      }))) : h("p", { className: "muted" }, t("No card placed this round."));
    var body;
    if (ended) body = h("p", { className: "prompt" }, t("The play of this round has ended: score its colours."));
    else if (s.scored.length || s.decided) body = h("p", { className: "muted" }, t("This round is being scored: no more cards are placed."));
    else {
      body = [h("p", { className: "prompt" }, t("{name} places a card", { name: s.players[turn] })),
        H.choice(info.colours.map(function (c) {
          return { value: c, label: C.colour(c), disabled: closed(rowOf(info.rows, c)), data: { color: c } };
        }), ui.placeColor, function (c) { ui.placeColor = c; ctx.redraw(); }, "colours"),
        H.tabs([{ value: "heaven", label: t("heaven"), id: "side-heaven" }, { value: "hell", label: t("hell"), id: "side-hell" }],
          ui.side, function (side) { ui.side = side; ctx.redraw(); }),
        H.choice([1, 2, 3, 4, 5].map(function (v) { return { value: v, label: String(v), data: { value: String(v) } }; }),
          ui.placeValue, function (v) { ui.placeValue = v; ctx.redraw(); }, "values"),
        h("button", { type: "button", className: "primary wide", id: "enter-place", disabled: !(ui.placeColor && ui.placeValue),
          onclick: function () {
            ctx.send({ type: "place", seat: turn, color: ui.placeColor, side: ui.side, value: ui.placeValue },
              t("{name}: {value} on {color} ({side})", { name: s.players[turn], value: ui.placeValue, color: C.colour(ui.placeColor), side: t(ui.side) }))
              .then(H.emptyAfter(ctx, { placeValue: null }));
          } }, t("Place it"))];
    }
    return {
      key: H.stable(["place", info.rows, turn, ended, ui.placeColor, ui.side, ui.placeValue, ui.rowsOpen]),
      node: h("details", { className: "rows-entry", open: ui.rowsOpen ? true : null,
        ontoggle: function () { ui.rowsOpen = this.open; } },
        h("summary", null, t("Rows, card by card (optional)")), table, body)
    };
  }

  C.entries.diabolo = function (ctx) {
    var info = tableOf(ctx.s, ctx.steps);
    info.colours = colourList(info.used, ctx.ui.extra);
    var score = scoreEntry(ctx, info);
    var place = placeEntry(ctx, info);
    return { key: score.key + place.key, node: [score.node, place.node] };
  };
})();
