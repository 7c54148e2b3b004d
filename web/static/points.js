/* Points and tokens by a tap and a number, for the free scoreboard: each
   seat's score with a number field ("-3" takes points off), "Add", and a
   token taken or given; the answer line says what was entered and offers
   to undo it while it is still the last thing the table did.  Used by the
   table control (/control) and a claimed seat's page (/seat/<n>), both
   with the table PIN (the PIN writes for any seat, as the box's buttons do).

   C.pointsPanel({send, me}) -> {node, state(s)}
     send(action, okText) -> Promise of {ok, status, body, error}
     me                      this page's own seat (marked "you"), or null
   Nothing here reads a secret: only the public state. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;

  // What the answer's "Undo" compares: the table's public numbers.
  function numbers(s) {
    return JSON.stringify([s.game, s.players, s.scores, s.tokens, s.entered, s.reveal, s.finished]);
  }

  // "12", "-3", "−3", "+4" -> the number; "" -> null; else NaN.
  function whole(text) {
    text = String(text).trim().replace("\u2212", "-").replace(/^\+/, "");
    if (text === "") return null;
    return /^-?\d{1,10}$/.test(text) ? parseInt(text, 10) : NaN;
  }

  C.pointsPanel = function (opts) {
    var state = null;
    var typed = {};          // seat -> what is typed, kept over redraws
    var drawnKey = null;
    var last = null;         // {text, after}: the last entry made here, and the state it left
    var list = h("ul", { className: "points-list" });
    var over = h("p", { className: "prompt points-over", hidden: true }, t("Game over"));
    var msg = h("p", { className: "msg", role: "status", "aria-live": "polite", hidden: true });
    var undoBox = h("span", { className: "fixed" });
    // The answer, and beside it the way back while it is still the table's last entry.
    var node = h("div", { className: "points" }, list, over, h("div", { className: "row points-answer" }, msg, undoBox));

    function say(text, kind) { C.message(msg, text, kind); }

    function submit(action, okText, done) {
      say(t("Sending…"));
      C.replace(undoBox);
      return opts.send(action, okText).then(function (r) {
        if (r.ok) {
          last = action.type === "undo" ? null : { text: okText, after: r.body ? numbers(r.body) : null };
          say(okText, "ok");
          if (done) done();
        } else {
          say(r.error || t("The box does not answer: try again."), "error");
        }
        drawUndo();
        return r;
      });
    }

    function drawUndo() {
      var ours = last && state && last.after === numbers(state);
      if (last && !ours) {           // the table moved on since: the line would say something old
        last = null;
        if (msg.classList.contains("ok")) say("");
      }
      if (!ours) return C.replace(undoBox);
      C.replace(undoBox, h("button", { type: "button", className: "fixed", "data-testid": "undo-last", id: "undo-last",
        onclick: function () {
          submit({ type: "undo" }, t("Undone: {what}", { what: last.text }));
        } }, t("Undo this")));
    }

    function addPoints(seat, field) {
      var n = whole(field.value);
      if (n === null || n === 0) { say(t("Type the points first (a minus sign takes them off)."), "error"); field.focus(); return; }
      if (isNaN(n)) { say(t("Enter a whole number."), "error"); field.focus(); return; }
      var name = state.players[seat];
      var sent = field.value;
      submit({ type: "add", seat: seat, points: n }, t("{name} {points}", { name: name, points: C.signed(n) }), function () {
        // The row may have been drawn anew meanwhile (the table's event came
        // before the answer), and the next number typed into it already:
        // empty the field only while it still holds the number just added.
        if (typed[seat] === sent) typed[seat] = "";
        [document.getElementById("points-" + seat), field].forEach(function (f) {
          if (f && f.value === sent) f.value = "";
        });
      });
    }

    function giveToken(seat, delta) {
      var name = state.players[seat];
      submit({ type: "token", seat: seat, delta: delta }, t("{name}: token {delta}", { name: name, delta: C.signed(delta) }));
    }

    function seatRow(seat) {
      var name = state.players[seat];
      var id = "points-" + seat;
      var field = h("input", { id: id, type: "number", step: "1", autocomplete: "off", enterkeyhint: "done",
        className: "num-input", "data-testid": "points-" + (seat + 1), placeholder: "\u00b1",
        "aria-label": t("Points for {name}", { name: name }), value: typed[seat] || "",
        oninput: function () { typed[seat] = this.value; } });
      return h("li", { dataset: { seat: String(seat) } },
        h("div", { className: "points-head" }, C.dot(seat),
          h("span", { className: "who" }, h("strong", null, name), seat === opts.me ? h("span", { className: "chip" }, t("you")) : null),
          h("span", { className: "points-score", "aria-label": t("Score") }, C.number(state.scores[seat]))),
        h("form", { className: "row points-form", onsubmit: function (e) { e.preventDefault(); addPoints(seat, field); } },
          field,
          h("button", { type: "submit", className: "primary fixed", "data-testid": "add-points-" + (seat + 1) }, t("Add"))),
        h("div", { className: "row points-tokens" },
          h("span", { className: "token-count" }, t("Tokens: {n}", { n: state.tokens[seat] })),
          // Named as seen ("−1"), then whose: a screen reader says "−1 token for Ann".
          h("button", { type: "button", className: "fixed", "data-testid": "token-minus-" + (seat + 1),
            disabled: state.tokens[seat] <= 0, "aria-label": t("{delta} token for {name}", { delta: "\u22121", name: name }),
            onclick: function () { giveToken(seat, -1); } }, "\u22121"),
          h("button", { type: "button", className: "fixed", "data-testid": "token-plus-" + (seat + 1),
            "aria-label": t("{delta} token for {name}", { delta: "+1", name: name }),
            onclick: function () { giveToken(seat, 1); } }, "+1")));
    }

    function draw() {
      var key = numbers(state);
      if (key !== drawnKey) {
        drawnKey = key;
        over.hidden = !state.finished;
        var winners = state.winner || [];
        over.textContent = t("Game over") + (winners.length === 1 ? " \u2014 " + t("{name} wins!", { name: state.players[winners[0]] })
          : winners.length ? " \u2014 " + t("Shared win: {names}", { names: C.names(state, winners) }) : "");
        if (state.finished) C.replace(list);
        else C.replace(list, state.players.map(function (p, seat) { return seatRow(seat); }));
      }
      drawUndo();
    }

    return {
      node: node,
      // Whether the answer line offers to undo this phone's last entry.
      offersUndo: function () { return !!(last && state && last.after === numbers(state)); },
      state: function (s) {
        if (state && (s.game !== state.game || JSON.stringify(s.players) !== JSON.stringify(state.players))) {
          typed = {};
          last = null;
          say("");
        }
        state = s;
        draw();
      }
    };
  };
})();
