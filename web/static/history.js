/* The table's past games: the import form of /history, and on /history/<id>
   the chart, the step-through of the log, the full export and resuming.

   Everything drawn here comes from the page's boot data (boot.detail: the
   record and the public steps of companion.history.public_steps, the later
   pages of steps fetched from /api/history/<id>?from=K), so no
   secret the table has not seen revealed ever reaches this script.  The
   board, details and chart renderers are the scoreboard's (board.js,
   games.js, chart.js) when present; a plain table otherwise. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;

  // -- times in the phone's own clock and language -------------------------------
  function localTimes() {
    var nodes = document.querySelectorAll("time[data-ts]");
    Array.prototype.forEach.call(nodes, function (node) {
      var date = new Date(parseFloat(node.dataset.ts) * 1000);
      try {
        node.textContent = date.toLocaleString(C.boot.lang || undefined,
          { dateStyle: "medium", timeStyle: "short" });
      } catch (e) { /* keep the box's rendering */ }
    });
  }

  // -- the PIN: the phone's (common.js), or asked for once ------------------------
  function withPin(done) {
    var saved = C.pin.get();
    if (saved) return done(saved);
    var form = document.getElementById("pin-form");
    if (!form) return done(null);
    form.hidden = false;
    form.elements.pin.focus();
    form.onsubmit = function (e) {
      e.preventDefault();
      var pin = form.elements.pin.value.trim();
      if (!pin) return;
      form.hidden = true;
      done(pin);
    };
    document.getElementById("pin-cancel").onclick = function () { form.hidden = true; };
  }

  // A PIN the box took is kept for the phone; a refused one is forgotten
  // (common.js), so that the next try asks again.
  function answered(r, pin) {
    if (r.ok) C.pin.set(pin);
    else C.pinRefused(r.status, { "X-Table-Pin": pin });
    return r;
  }

  // -- /history: import a log ---------------------------------------------------------
  // The box says which line of the file it refused ("line 3: ...", the
  // replay contract's words); a person reads which step of the game it is.
  function importRefusal(error) {
    var m = /^line (\d+): ([\s\S]*)$/.exec(error || "");
    return m ? t("Step {n} of the file is refused: {reason}", { n: m[1], reason: m[2] }) : error;
  }

  function startImport() {
    var form = document.getElementById("import-form");
    if (!form) return;
    var msg = document.getElementById("import-msg");
    // A phone that gave the PIN once is not asked again: the field hides
    // while the PIN is kept, and comes back when the box refuses it.
    function drawPin() {
      var kept = C.pin.get();
      form.elements.pin.value = kept;
      form.elements.pin.required = !kept;
      document.getElementById("import-pin").hidden = !!kept;
      document.getElementById("import-pin-kept").hidden = !kept;
    }
    drawPin();
    var chosen = document.getElementById("import-file-name");
    form.elements.file.addEventListener("change", function () {
      var file = form.elements.file.files[0];
      chosen.textContent = file ? file.name : t("No file chosen yet.");
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var file = form.elements.file.files[0];
      var pin = C.pin.get() || form.elements.pin.value.trim();
      if (!file) return C.message(msg, t("Choose the game's file first."), "error");
      if (!pin) return C.message(msg, t("Enter the table PIN first."), "error");
      C.message(msg, t("Sending…"));
      file.text().then(function (text) {
        return C.api("POST", "/api/history/import", text, { "X-Table-Pin": pin });
      }).then(function (r) {
        answered(r, pin);
        drawPin();
        if (!r.ok) return C.message(msg, importRefusal(r.error), "error");
        C.replace(msg, t("Imported as game {id}.", { id: r.body.id }), " ",
          h("a", { href: "/history/" + r.body.id }, t("Open it")));
        msg.className = "msg ok";
        msg.hidden = false;
      });
    });
  }

  // -- /history/<id> ----------------------------------------------------------------------
  // The steps still in effect up to ``upto`` (an undo takes its step back, as
  // on the table), each with the state before it, as board.js's renderers want.
  function inEffect(steps, upto) {
    var out = [];
    for (var i = 0; i <= upto && i < steps.length; i++) {
      var step = steps[i];
      if (step.action.type === "undo") {
        if (out.length > 1) out.pop();
        continue;
      }
      var before = out.length ? out[out.length - 1].state : null;
      out.push({ n: step.n, action: step.action, state: step.state, before: before });
    }
    return out;
  }

  // One line for one action: the game's own wording where it has one, else
  // the fields, a hidden value shown as "hidden".
  function describe(step, state) {
    var a = step.action;
    if (a.type === "new_game") return t("New game: {players}", { players: (a.players || []).join(", ") });
    if (a.type === "undo") return t("Undo");
    if (a.type === "clock" && Array.isArray(a.banks)) return clockLine(a, state);
    if (C.gameOf) {
      try {
        var own = C.gameOf(state).describe(step);
        if (own) return own;
      } catch (e) { /* the generic line below */ }
    }
    var parts = Object.keys(a).filter(function (k) { return k !== "type" && k !== "seat"; }).map(function (k) {
      return k + " " + (a[k] === null ? t("hidden") : JSON.stringify(a[k]));
    });
    var what = a.type + (parts.length ? " " + parts.join(", ") : "");
    if (typeof a.seat === "number" && state.players && state.players[a.seat] !== undefined) {
      return t("{name}: {action}", { name: state.players[a.seat], action: what });
    }
    return what;
  }

  // A turn clock's handover (docs/replay.md): every seat's time, and whose runs.
  function clockLine(a, state) {
    var players = state.players || [];
    var times = a.banks.map(function (ms, seat) {
      var s = Math.max(0, Math.ceil(ms / 1000)), hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60);
      var two = function (n) { return (n < 10 ? "0" : "") + n; };
      return (players[seat] || "?") + " " + (hh ? hh + ":" + two(mm) : mm) + ":" + two(s % 60);
    }).join(", ");
    if (typeof a.turn === "number") return t("Clock: {times} · {name} to play", { times: times, name: players[a.turn] || "?" });
    return t("Clock: {times} · stopped", { times: times });
  }

  function plainBoard(root, s) {
    C.replace(root, h("table", { className: "board" }, h("tbody", null, s.players.map(function (name, seat) {
      return h("tr", null, h("td", null, C.dot(seat)), h("td", { className: "name" }, name),
        h("td", { className: "num" }, C.number(s.scores[seat])),
        s.tokens ? h("td", { className: "num" }, String(s.tokens[seat])) : null);
    }))));
  }

  function startGame(detail) {
    var steps = detail.steps || [];
    if (!steps.length) return;
    var last = steps.length - 1;
    var final = steps[last].state;

    var chart = document.getElementById("chart");
    if (C.renderChart && C.chart && C.seriesOf) {
      C.renderChart(chart, final, inEffect(steps, last));
    }

    var board = document.getElementById("step-board");
    var details = document.getElementById("step-details");
    var where = document.getElementById("where");
    var action = document.getElementById("action");
    var scrub = document.getElementById("scrub");
    var index = last;

    function show(k) {
      index = Math.max(0, Math.min(last, k));
      var step = steps[index];
      where.textContent = t("Step {k} of {n}", { k: index + 1, n: steps.length });
      action.textContent = describe(step, step.state);
      if (C.renderBoard) {
        C.renderBoard(board, step.state, { steps: inEffect(steps, index) });
        var title = board.querySelector(".game-title");       // the page's own title says it
        if (title) title.remove();
      } else {
        plainBoard(board, step.state);
      }
      if (C.renderDetails) C.renderDetails(details, step.state, inEffect(steps, index), { log: false });
      scrub.value = String(index);
      document.getElementById("first").disabled = document.getElementById("prev").disabled = index === 0;
      document.getElementById("last").disabled = document.getElementById("next").disabled = index === last;
    }
    document.getElementById("first").onclick = function () { show(0); };
    document.getElementById("prev").onclick = function () { show(index - 1); };
    document.getElementById("next").onclick = function () { show(index + 1); };
    document.getElementById("last").onclick = function () { show(last); };
    scrub.oninput = function () { show(parseInt(scrub.value, 10)); };
    document.addEventListener("keydown", function (e) {
      if (e.target && /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
      if (e.key === "ArrowLeft") show(index - 1);
      if (e.key === "ArrowRight") show(index + 1);
    });
    show(last);
  }

  function startActions(record) {
    var msg = document.getElementById("msg");

    var full = document.getElementById("full-export");
    if (full) full.onclick = function () {
      withPin(function (pin) {
        if (!pin) return C.message(msg, t("Enter the table PIN first."), "error");
        var url = "/api/history/" + record.id + "/export.jsonl?lang=" + encodeURIComponent(C.boot.lang || "en");
        fetch(url, { headers: { "X-Table-Pin": pin }, cache: "no-store" }).then(function (response) {
          if (!response.ok) {
            answered({ ok: false, status: response.status }, pin);
            return response.text().then(function (text) {
              C.message(msg, C.errorText(response.status, text), "error");
            });
          }
          C.pin.set(pin);
          return response.blob().then(function (blob) {
            var link = h("a", { href: URL.createObjectURL(blob),
                                download: "game-" + String(record.id).padStart(6, "0") + "-" + record.game + ".jsonl" });
            document.body.appendChild(link);
            link.click();
            link.remove();
            C.message(msg, t("Downloaded."), "ok");
          });
        }, function () { C.message(msg, t("The box does not answer: try again."), "error"); });
      });
    };

    // Resuming makes this game the table's: the game at the table now (if
    // one is going on) is left unfinished, which the page names and asks once.
    var resume = document.getElementById("resume-button");
    function resumeAsked(go) {
      C.api("GET", "/api/state").then(function (r) {
        var s = r.ok && r.body;
        if (!s || !s.game || s.finished || !(s.players || []).length) return go();
        resume.hidden = true;
        var box = h("div", { className: "confirm", id: "resume-confirm", role: "group", "aria-labelledby": "resume-prompt" },
          h("p", { className: "prompt", id: "resume-prompt" }, t("Resume this game?")),
          h("p", null, C.leftUnfinished(s)),
          h("button", { type: "button", className: "danger wide", id: "resume-yes",
                        onclick: function () { box.remove(); resume.hidden = false; go(); } }, t("Resume it")),
          h("button", { type: "button", className: "wide", id: "resume-no",
                        onclick: function () { box.remove(); resume.hidden = false; resume.focus(); } }, t("Cancel")));
        resume.parentNode.insertBefore(box, resume.nextSibling);
        document.getElementById("resume-no").focus();          // the safe answer first
      });
    }
    if (resume) resume.onclick = function () { resumeAsked(resumeIt); };
    function resumeIt() {
      withPin(function (pin) {
        if (!pin) return C.message(msg, t("Enter the table PIN first."), "error");
        C.message(msg, t("Sending…"));
        C.api("POST", "/api/history/" + record.id + "/resume", undefined, { "X-Table-Pin": pin }).then(function (r) {
          answered(r, pin);
          if (!r.ok) return C.message(msg, r.error, "error");
          C.message(msg, t("Resumed: it is the game at the table now."), "ok");
          setTimeout(function () { window.location.href = "/"; }, 800);
        });
      });
    }
  }

  // The page carries the first page of steps (docs/api.md: a long game comes
  // in pages of at most 200 steps); the others are fetched one after the
  // other, then the step-through starts with them all.
  function allSteps(detail) {
    var steps = (detail.steps || []).slice();
    function more(next) {
      if (!next) return Promise.resolve(steps);
      return C.api("GET", next).then(function (r) {
        if (!r.ok || !r.body) return steps;        // what came so far
        steps = steps.concat(r.body.steps || []);
        return more(r.body.page && r.body.page.next);
      });
    }
    return more(detail.page && detail.page.next);
  }

  localTimes();
  if (C.boot.page === "history") startImport();
  if (C.boot.page === "history-game" && C.boot.detail) {
    startActions(C.boot.detail.record);
    allSteps(C.boot.detail).then(function (steps) {
      C.boot.detail.steps = steps;
      startGame(C.boot.detail);
      C.historyDrawn = true;              // the page is whole (a test waits for it, not for a time)
    });
  }
})();
