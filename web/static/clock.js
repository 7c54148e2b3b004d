/* The turn clock on a phone page: every seat's time, the running one
   counting down here, from the last "clock" event (the box sends one per
   handover, pause or resume, never one per second).

   C.turnClock(section, opts): opts.me (a seat or null), opts.send(path)
   (a function that POSTs with this page's credential and returns the
   C.api promise), opts.control (true: the table control, with pause and
   resume).  Returns {clock(live), state(public)} for C.live's handlers. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;
  var FOLLOWED = { "fight": 1, "yenta": 1, "sloppy-seconds": 1 };

  function format(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
    var two = function (n) { return (n < 10 ? "0" : "") + n; };
    return hh ? hh + ":" + two(mm) + ":" + two(ss) : mm + ":" + two(ss);
  }

  C.turnClock = function (section, opts) {
    var live = null, state = {}, heardAt = 0, timer = null;
    // Which buttons are shown: draw() runs once a second while a turn runs,
    // and a button made anew under a finger loses its tap (the press lands
    // on one element, the release on another: no click).  They are made
    // again only when they change.
    var shownButtons = null;
    var msg = h("p", { className: "msg", role: "status", "aria-live": "polite", hidden: true });
    var list = h("ul", { className: "seat-list clock-list" });
    var buttons = h("div", { className: "row" });
    var title = h("h2", { id: "clock-title" }, t("Turn clock"));
    section.setAttribute("aria-labelledby", "clock-title");

    function left(seat) {
      var bank = live.banks[seat];
      if (seat !== live.turn) return bank;
      var since = live.running ? Date.now() - heardAt : 0;
      return Math.max(0, bank - live.used_ms - Math.max(0, since - live.free_ms));
    }

    function post(path) {
      C.message(msg, t("Sending…"));
      opts.send(path).then(function (r) {
        if (r.ok) C.message(msg, "");
        else C.message(msg, r.error, "error");
      });
    }

    function draw() {
      clearTimeout(timer);
      if (!live || !state.players) {
        section.hidden = !(opts.control && state.game);
        C.replace(list); C.replace(buttons);
        shownButtons = null;
        return;
      }
      section.hidden = false;
      var players = state.players;
      var rows = live.banks.map(function (bank, seat) {
        var ms = left(seat);
        var running = seat === live.turn;
        var text = ms <= 0 ? t("Time up!") : format(ms);
        return h("li", { className: running ? "running" : "" },
          C.dot(seat), h("span", { className: "who" }, h("strong", null, players[seat] || "?"),
            running ? " " + (live.running ? t("to play") : t("paused")) : ""),
          h("span", { className: "num clock-time" }, text));
      });
      C.replace(list, rows);
      var canEnd = !FOLLOWED[state.game] && live.turn !== null && (opts.control || opts.me === live.turn);
      var canPause = live.turn !== null && (opts.control || opts.me !== null);
      var which = [canEnd, canPause, live.running].join();
      if (which !== shownButtons) {
        shownButtons = which;
        var controls = [];
        if (canEnd) {
          controls.push(h("button", { type: "button", className: "primary", onclick: function () { post("/api/clock/end-turn"); } },
            opts.control ? t("End the turn") : t("End my turn")));
        }
        if (canPause) {
          controls.push(live.running
            ? h("button", { type: "button", onclick: function () { post("/api/clock/pause"); } }, t("Pause"))
            : h("button", { type: "button", onclick: function () { post("/api/clock/resume"); } }, t("Go on")));
        }
        C.replace(buttons, controls);
      }
      if (live.running && live.turn !== null && left(live.turn) > 0) {
        // Redraw when the running seat's shown second changes, not before.
        var ms = left(live.turn);
        timer = setTimeout(draw, ms - (Math.ceil(ms / 1000) - 1) * 1000 + 5);
      }
    }

    var form = null;
    if (opts.control) {
      // Times set from a phone: the same choices as the box's set-up.
      var mode = h("select", { id: "clock-mode" },
        h("option", { value: "fischer" }, t("Fischer")), h("option", { value: "delay" }, t("Delay")),
        h("option", { value: "sudden" }, t("Sudden death")));
      var minutes = h("input", { id: "clock-minutes", type: "number", min: "1", max: "1440", value: "10", inputmode: "numeric" });
      var seconds = h("input", { id: "clock-seconds", type: "number", min: "0", max: "3600", value: "5", inputmode: "numeric" });
      form = h("form", { onsubmit: function (e) {
        e.preventDefault();
        C.message(msg, t("Sending…"));
        opts.send("/api/clock", { mode: mode.value, bank_s: Math.round(Number(minutes.value) * 60),
                                  extra_s: Math.round(Number(seconds.value)) }).then(function (r) {
          if (r.ok) C.message(msg, "");
          else C.message(msg, r.error, "error");
        });
      } },
        h("label", { for: "clock-mode" }, t("Mode")), mode,
        h("label", { for: "clock-minutes" }, t("Minutes per player")), minutes,
        h("label", { for: "clock-seconds" }, t("Increment or delay (seconds)")), seconds,
        h("button", { type: "submit", className: "wide" }, t("Start a new clock")));
    }
    C.replace(section, title, list, buttons, msg, form);
    section.hidden = !opts.control;
    return {
      clock: function (l) { live = l; heardAt = Date.now(); draw(); },
      state: function (s) { state = s; if (!s.clock) live = null; draw(); }
    };
  };
  C.formatClock = format;
})();
