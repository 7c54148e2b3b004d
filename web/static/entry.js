/* The table control's entry panel: one game's turns entered by taps, with
   the table PIN, instead of typing JSON.  Each game draws its own panel
   (web/static/entry-<game>.js registers Companion.entries[id]); this file
   follows the state (handed over by control.js) and the current game's
   history (/api/history/current: the cards already played, the colours
   named, the rows), redraws a panel only when what it shows has changed
   (a half-typed number survives a change elsewhere), and sends through
   control.js, whose message line shows the box's answer or refusal.

   A game's entry: function (ctx) -> {key: string, node: [nodes]}
     ctx.s        the public state
     ctx.steps    the steps still in effect ([{n, action, state, before}],
                  board.js), possibly one change behind: ctx.fresh says
                  whether they end at ctx.s
     ctx.ui       what this phone is in the middle of (taps so far); kept
                  until the game at the table changes
     ctx.send(action, okText) -> Promise of {ok, status, body, error}
     ctx.redraw() draw again now (after a tap changed ctx.ui)            */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;
  if (C.boot.page !== "control") return;

  var E = (C.entries = C.entries || {});
  var section = document.getElementById("entry-section");
  var state = C.boot.state;
  var steps = [];
  var ui = {};
  var uiGame = null;
  var drawnKey = null;

  // -- helpers for the games' panels ----------------------------------------------
  var H = (C.entryKit = {});
  var touches = 0;         // a player's picks and keystrokes on the panel (H.emptyAfter)

  // Buttons to pick one of ``items`` ([{value, label, sub, disabled, id}]);
  // the picked one is pressed.  ``cls``: extra class of the group.
  H.choice = function (items, picked, onPick, cls, label) {
    return h("div", { className: "choices " + (cls || ""), role: "group", "aria-label": label || null },
      items.map(function (item) {
        var on = item.pressed !== undefined ? item.pressed
          : picked !== null && picked !== undefined && JSON.stringify(picked) === JSON.stringify(item.value);
        return h("button", { type: "button", "aria-pressed": on ? "true" : "false", disabled: !!item.disabled,
          id: item.id || null, dataset: item.data || null, className: item.className || null,
          onclick: function () { touches++; onPick(item.value); } },
          item.label, item.sub !== undefined && item.sub !== null ? h("small", null, item.sub) : null);
      }));
  };

  // Two or more ways to enter the same thing (cards / quick).
  H.tabs = function (items, current, onPick) {
    return h("div", { className: "tabs", role: "tablist" }, items.map(function (item) {
      return h("button", { type: "button", role: "tab", "aria-selected": item.value === current ? "true" : "false",
        id: item.id || null, disabled: !!item.disabled, onclick: function () { touches++; onPick(item.value); } }, item.label);
    }));
  };

  // A whole-number field; ``onValue(n or null)`` on every keystroke.
  H.number = function (id, value, onValue, options) {
    options = options || {};
    return h("input", { id: id, type: "text", inputmode: "numeric", pattern: "[0-9]*", autocomplete: "off",
      className: "num-input" + (options.className ? " " + options.className : ""),
      "aria-label": options.label || null, placeholder: options.placeholder || "",
      readonly: options.readonly ? true : null,
      value: value === null || value === undefined ? "" : String(value),
      oninput: function () { touches++; onValue(H.whole(this.value)); } });
  };

  // "12" -> 12; "" -> null; anything else -> NaN (shown as an error by the caller).
  H.whole = function (text) {
    text = String(text).trim().replace("\u2212", "-");
    if (text === "") return null;
    return /^-?\d+$/.test(text) ? parseInt(text, 10) : NaN;
  };

  H.seatName = function (s, seat) { return s.players[seat]; };
  H.range = function (n) { var out = []; for (var i = 0; i < n; i++) out.push(i); return out; };

  // A key for "did anything I show change": stable over key order.
  H.stable = function stable(value) {
    if (Array.isArray(value)) return "[" + value.map(stable).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map(function (k) { return JSON.stringify(k) + ":" + stable(value[k]); }).join(",") + "}";
    }
    return JSON.stringify(value);
  };

  // After an entry is sent: its fields made empty again (``empties``: name
  // -> the empty value) once the box says yes -- unless a player touched the
  // panel since.  The table's event often comes before the box's answer,
  // the panel is drawn anew from it (its own defaults, not a player's
  // doing), and a quick player may have begun the next entry there: the
  // answer must not take that away.  Touches are counted where the panels'
  // buttons and fields are made (choice, tabs, number).
  //   ctx.send(action, text).then(H.emptyAfter(ctx, { value: null }))
  H.emptyAfter = function (ctx, empties) {
    var ui = ctx.ui, at = touches;
    return function (r) {
      if (r.ok && touches === at) {
        Object.keys(empties).forEach(function (n) { ui[n] = Array.isArray(empties[n]) ? empties[n].slice() : empties[n]; });
        ctx.redraw();
      }
      return r;
    };
  };

  // The game's own status lines (games.js): who leads, the trump, whose turn.
  H.status = function (s) {
    var lines = C.gameOf(s).status(s);
    return lines.length ? h("div", { className: "status" }, lines.map(function (line, i) {
      return h("p", { className: i === 0 ? "status-main" : null }, line);
    })) : null;
  };

  // One of the board's sections (games.js), by its title: the same rendering
  // as the scoreboard (the judge's reasoning of the last trick...).
  H.boardSection = function (s, title) {
    var found = C.gameOf(s).sections(s, steps).filter(function (sec) { return sec.title === title; })[0];
    return found ? h("div", { className: "entry-board " + (found.className || "") }, h("h3", null, found.title), found.body) : null;
  };

  // -- drawing ---------------------------------------------------------------------
  function body() {
    if (!section.firstElementChild || !section.firstElementChild.classList.contains("body")) {
      C.replace(section, h("div", { className: "body" }));
    }
    return section.firstElementChild;
  }

  function fresh() {
    if (!steps.length) return false;
    return H.stable(steps[steps.length - 1].state) === H.stable(state);
  }

  function context() {
    return {
      s: state, steps: steps, fresh: fresh(), ui: ui,
      send: send, redraw: function () { draw(true); }
    };
  }

  function draw(force) {
    var entry = state.game ? E[state.game] : null;
    if (!entry) {
      section.hidden = true;
      drawnKey = null;
      return;
    }
    var table = JSON.stringify([state.game, state.players]);
    if (uiGame !== table) { ui = {}; uiGame = table; }      // another game: start afresh
    section.hidden = false;
    var ctx = context();
    // A game's panel that says its own end (``entry.keepsEnd``: the scoreboard's
    // points keep their "Undo this" for the entry that ended it) is drawn then too.
    var out = state.finished && !entry.keepsEnd ? { key: "over", node: h("p", { className: "prompt" }, t("The match is over.")) } : entry(ctx);
    // The whole state is in the key (the status lines follow it); typed
    // numbers live in ctx.ui, so a redraw keeps them.
    var key = H.stable(state) + "|" + out.key;
    if (!force && key === drawnKey) return;
    drawnKey = key;
    C.replace(body(), h("h2", null, C.title(state.game)), state.finished ? null : H.status(state), out.node);
  }

  function send(action, okText) {
    var control = C.control;
    if (!control) return Promise.resolve({ ok: false });
    return control.send("POST", "/api/actions", action, okText || t("Done."), section).then(function (r) {
      if (r.ok) refresh();              // the state event follows; the history too
      else {
        var msg = document.getElementById("control-msg");      // the box's refusal, in sight
        if (msg && msg.scrollIntoView) msg.scrollIntoView({ block: "nearest" });
      }
      return r;
    });
  }

  var refresh = C.historyFollower(function (history) {
    steps = history.game === state.game ? C.rebuild(history) : [];
    draw();
  });

  // control.js hands every state over (one live connection per page).
  C.entry = {
    state: function (s) {
      state = s;
      draw();
      refresh();
    }
  };

  // The games' modules load after this file: draw once they have.
  document.addEventListener("DOMContentLoaded", function () { draw(true); refresh(); });
})();
