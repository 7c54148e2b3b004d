/* Table control, with the table PIN: the game at the table first (its
   entry panel, e.g. the free scoreboard's points, and undo), a new game
   (game, players from the box's name list or typed, options), then folded:
   the turn clock, the seats' claims, the table's players, and "Advanced"
   (any one action typed by hand).  What loses or ends something asks once
   on the page and says what happens (a new game over an unfinished one, a
   seat released).  The box checks everything and answers its own clear
   error, shown as it is. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;
  var boot = C.boot;
  if (boot.page !== "control") return;

  var msg = document.getElementById("control-msg");
  var state = boot.state;
  var seats = boot.seats;
  var catalogue = { games: [], names: [] };

  // Option names as the box's menus say them.
  var OPTION_LABELS = {
    tokens_to_win: "Tokens to win", first_lead: "First lead", hands_to_win: "Hands to win",
    coins: "Coins", first: "First player", target: "Target score", first_dealer: "First dealer",
    name: "Game name (for BG Stats)", bgg_id: "BoardGameGeek id"
  };

  // One example per action of each game, for the JSON form.
  var EXAMPLES = {
    "third-man": ['{"type": "bid", "seat": 0, "card": 5}'],
    "costly-tricks": ['{"type": "deal", "lead": 0}', '{"type": "trick", "winner": 0, "points": 12}',
                      '{"type": "trick", "cards": [["red", 5], ["blue", 3], ["black", 10], ["blue", 6]]}'],
    fight: ['{"type": "turn", "seat": 0, "play": 10, "take": [5, 1]}'],
    "sloppy-seconds": ['{"type": "trick", "cards": ["QS", "10H", "AD", "2S"]}',
                       '{"type": "hand", "points": [{"S": 91, "H": 0, "D": 0, "C": 0}, {"S": 0, "H": 91, "D": 0, "C": 0}, {"S": 0, "H": 0, "D": 91, "C": 0}, {"S": 0, "H": 0, "D": 0, "C": 91}]}'],
    yenta: ['{"type": "bid", "seat": 0, "amount": 10}', '{"type": "ask", "seat": 0, "target": 1, "value": 4, "hit": true}',
            '{"type": "pass", "seat": 0}', '{"type": "last", "seat": 2, "dice": [3, 5]}'],
    diabolo: ['{"type": "place", "seat": 0, "color": "red", "side": "heaven", "value": 4}',
              '{"type": "score", "color": "red", "hands": [5, 3, 0], "heaven": 12, "hell": 5}',
              '{"type": "double", "seat": 0, "color": "red", "play": true}'],
    scoreboard: ['{"type": "add", "seat": 0, "points": 5}', '{"type": "token", "seat": 0, "delta": 1}',
                 '{"type": "secret", "seat": 0, "value": 7}'],
    any: ['{"type": "undo"}']
  };

  // Each section draws into its own body; the answer line sits after it and
  // survives a redraw (a state event right after an undo, say).
  function body(section) {
    if (!section.firstElementChild || !section.firstElementChild.classList.contains("body")) {
      C.replace(section, h("div", { className: "body" }));      // over the server's first paint
    }
    return section.firstElementChild;
  }

  function pinHeaders() { return { "X-Table-Pin": C.pin.get() }; }

  // Send with the PIN, no answer line: for a panel that shows its own
  // (the scoreboard's points).  A refused PIN is forgotten and asked again.
  function post(action) {
    if (!C.pin.get()) {
      drawPin();
      var field = document.getElementById("pin");
      if (field) { field.scrollIntoView({ block: "center" }); field.focus(); }
      return Promise.resolve({ ok: false, error: t("Enter the table PIN first.") });
    }
    C.message(msg, "");             // the panel says the answer: an older line here would mislead
    return C.api("POST", "/api/actions", action, pinHeaders()).then(function (r) {
      if (r.status === 403) { C.pin.clear(); drawPin(); }
      return r;
    });
  }

  // Send with the PIN; show the box's answer at the foot of the section the
  // request came from (``where``).  Resolves to the response.
  function send(method, path, body, okText, where) {
    if (where) where.appendChild(msg);
    if (!C.pin.get()) {
      C.message(msg, t("Enter the table PIN first."), "error");
      msg.scrollIntoView({ block: "center" });
      return Promise.resolve({ ok: false });
    }
    C.message(msg, t("Sending…"));
    return C.api(method, path, body, pinHeaders()).then(function (r) {
      if (r.ok) C.message(msg, okText || t("Done."), "ok");
      else {
        if (r.status === 403) { C.pin.clear(); drawPin(); }
        C.message(msg, r.error, "error");
      }
      return r;
    });
  }

  // The entry panel (entry.js) sends through here: same PIN, same answer line.
  // roster.js asks for the names again after it changed the table's players.
  C.control = { send: send, post: post, reloadNames: function () { reloadNames(); } };

  // The roster's names again (a name typed, a game started): a form nobody
  // has typed in yet is filled again from them, the last game's players first.
  function reloadNames() {
    return C.api("GET", "/api/games").then(function (r) {
      if (!r.ok || !catalogue.games.length) return;
      catalogue.names = r.body.names;
      if (!form.touched && gameById(form.game)) form.players = fitPlayers(gameById(form.game), state.players || []);
      drawNewGame();
    });
  }

  // -- the PIN ---------------------------------------------------------------------
  var pinSection = document.getElementById("pin-section");
  function drawPin() {
    if (C.pin.get()) {
      return C.replace(body(pinSection), h("div", { className: "row" }, h("p", { id: "pin-saved", tabindex: "-1" }, t("PIN saved on this phone.")),
        h("button", { type: "button", className: "fixed", onclick: function () { C.pin.clear(); drawPin(); } }, t("Forget PIN"))));
    }
    var input = h("input", { id: "pin", type: "password", inputmode: "numeric", autocomplete: "off", maxlength: "8",
                             placeholder: "\u2022\u2022\u2022\u2022", "data-testid": "pin", enterkeyhint: "done" });
    C.replace(body(pinSection), h("form", { onsubmit: function (e) {
      e.preventDefault();
      if (!input.value.trim()) return;
      C.pin.set(input.value.trim());
      C.message(msg, "");
      drawPin();
      document.getElementById("pin-saved").focus();     // the form is gone: the keyboard stays here
    } }, h("label", { for: "pin" }, t("Table PIN")),
      h("div", { className: "row" }, input, h("button", { type: "submit", className: "primary fixed" }, t("Save PIN"))),
      h("p", { className: "hint" }, t("The PIN is shown on the box."))));
  }

  // -- the current game and undo --------------------------------------------------------
  var current = document.getElementById("current-section");
  var confirming = false;
  function drawCurrent() {
    if (!state.game) return C.replace(body(current), h("p", null, t("No game yet.")));
    var undo = confirming
      ? h("div", { className: "row" },
          h("button", { type: "button", className: "danger", id: "undo-yes", onclick: function () {
            confirming = false;
            send("POST", "/api/actions", { type: "undo" }, t("Undone."), current).then(function () {
              drawCurrent();
              document.getElementById("undo").focus();
            });
          } }, t("Yes, undo")),
          h("button", { type: "button", id: "undo-cancel", onclick: function () {
            confirming = false;
            drawCurrent();
            document.getElementById("undo").focus();
          } }, t("Cancel")))
      : h("button", { type: "button", className: "wide", id: "undo", onclick: function () {
          confirming = true;
          drawCurrent();
          document.getElementById("undo-cancel").focus();    // the safe answer first: Shift+Tab reaches "Yes"
        } }, t("Undo the last action"));
    // Under a game's entry panel (which names the game), only the way back.
    var panel = C.entries && C.entries[state.game] && (!state.finished || C.entries[state.game].keepsEnd);
    C.replace(body(current),
      h("h2", { className: panel ? "visually-hidden" : null }, t("Current game: {title}", { title: C.title(state.game) })),
      panel ? null : h("p", null, state.players.join(", ") + (state.finished ? " \u2014 " + t("Game over") : "")),
      confirming ? h("p", { className: "prompt" }, t("Really undo?")) : null, undo);
  }

  // -- seats ------------------------------------------------------------------------------
  var seatSection = document.getElementById("seats-section");
  var seatsFold = document.getElementById("seats-fold");
  var releasing = null;          // the seat whose release is being asked
  function drawSeats() {
    var claimed = seats.filter(function (s) { return s.claimed; });
    if (!claimed.some(function (s) { return s.seat === releasing; })) releasing = null;
    var summary = seatsFold && seatsFold.querySelector("summary");
    if (summary) summary.textContent = claimed.length ? t("Seats taken by phones: {n}", { n: claimed.length }) : t("Seats");
    C.replace(body(seatSection), h("h2", null, t("Seats")),
      claimed.length ? h("ul", { className: "seat-list" }, claimed.map(function (s) {
        var asked = releasing === s.seat;
        return h("li", { dataset: { seat: String(s.seat) }, className: asked ? "asking" : null }, C.dot(s.seat),
          h("span", { className: "who" }, h("strong", null, s.player), t("taken by {label}", { label: s.label })),
          asked ? h("div", { className: "confirm", role: "group", "aria-labelledby": "release-prompt" },
            h("p", { className: "prompt", id: "release-prompt" },
              t("Release seat {n} ({name})? The phone “{label}” stops reading and entering for it; what it entered stays.",
                { n: s.seat + 1, name: s.player, label: s.label })),
            h("button", { type: "button", className: "danger wide", id: "release-yes", onclick: function () {
              releasing = null;
              send("POST", "/api/seats/" + s.seat + "/release", undefined, t("Released."), seatSection).then(drawSeats);
            } }, t("Release the seat")),
            h("button", { type: "button", className: "wide", id: "release-no", onclick: function () {
              releasing = null;
              drawSeats();
              var again = document.getElementById("release-" + s.seat);
              if (again) again.focus();
            } }, t("Cancel")))
          : h("button", { type: "button", className: "danger fixed", id: "release-" + s.seat, onclick: function () {
            releasing = s.seat;
            drawSeats();
            document.getElementById("release-no").focus();      // the safe answer first
          } }, t("Release")));
      })) : h("p", { className: "muted" }, t("No seat is claimed.")));
  }

  // -- new game -----------------------------------------------------------------------------
  var newSection = document.getElementById("new-game-section");
  var newFold = document.getElementById("new-game-fold");
  // ``touched``: a person typed or picked a name (the form keeps their choice).
  var form = { game: null, players: [], options: {}, touched: false };

  function gameById(id) {
    for (var i = 0; i < catalogue.games.length; i++) if (catalogue.games[i].id === id) return catalogue.games[i];
    return null;
  }

  function fitPlayers(game, wanted) {
    var names = wanted.filter(Boolean);
    var pool = (state.players || []).concat(catalogue.names);
    pool.forEach(function (n) { if (names.length < game.min_players && names.indexOf(n) < 0) names.push(n); });
    while (names.length < game.min_players) names.push("");
    return names.slice(0, game.max_players);
  }

  function chooseGame(id, players) {
    var game = gameById(id);
    if (!game) return;
    form.game = id;
    form.players = fitPlayers(game, players || form.players);
    form.options = {};
    drawNewGame();
  }

  function optionInput(key, spec) {
    var id = "opt-" + key;
    var label = h("label", { for: id }, t(OPTION_LABELS[key] || key),
      spec.default !== null && spec.default !== undefined && spec.kind !== "seat"
        ? h("span", { className: "hint" }, " (" + t("default: {value}", { value: typeof spec.default === "object" ? JSON.stringify(spec.default) : spec.default }) + ")") : null);
    var value = form.options[key];
    var input;
    var store = function (v) { if (v === "" || v === undefined) delete form.options[key]; else form.options[key] = v; };
    if (spec.kind === "seat") {
      input = h("select", { id: id, onchange: function () { store(this.value === "" ? "" : Number(this.value)); } },
        form.players.map(function (p, seat) {
          return h("option", { value: String(seat), selected: (value === undefined ? spec.default : value) === seat }, p || "#" + (seat + 1));          // people count seats from 1
        }));
    } else if (spec.kind === "int") {
      input = h("input", { id: id, type: "number", inputmode: "numeric", min: spec.min, max: spec.max,
        placeholder: spec.default === null ? "" : String(spec.default), value: value === undefined ? "" : String(value),
        oninput: function () { store(this.value === "" ? "" : Number(this.value)); } });
    } else if (spec.kind === "bool") {
      input = h("input", { id: id, type: "checkbox", checked: value === undefined ? !!spec.default : value,
        onchange: function () { store(this.checked); } });
    } else if (spec.kind === "str") {
      input = h("input", { id: id, type: "text", value: value || "", oninput: function () { store(this.value); } });
    } else {                                   // list, dict, record, any: as JSON
      input = h("textarea", { id: id, placeholder: spec.default === null ? "{}" : JSON.stringify(spec.default),
        oninput: function () { store(this.value.trim() ? { json: this.value } : ""); } },
        value && value.json ? value.json : "");
    }
    return [label, input];
  }

  function drawNewGame() {
    var game = gameById(form.game);
    if (!game) return;
    var nameList = h("datalist", { id: "box-names" }, catalogue.names.map(function (n) { return h("option", { value: n }); }));
    var rows = form.players.map(function (p, i) {
      return h("div", { className: "row" },
        h("input", { type: "text", maxlength: "24", list: "box-names", value: p, "aria-label": t("Player") + " " + (i + 1),
          className: "player-name", oninput: function () { form.players[i] = this.value; form.touched = true; } }),
        form.players.length > game.min_players ? h("button", { type: "button", className: "fixed", onclick: function () {
          form.players.splice(i, 1); form.touched = true; drawNewGame();
        } }, t("Remove")) : null);
    });
    var chips = catalogue.names.filter(function (n) { return form.players.indexOf(n) < 0; });
    var count = game.min_players === game.max_players ? t("{n} players", { n: game.min_players })
      : t("{lo} to {hi} players", { lo: game.min_players, hi: game.max_players });
    C.replace(body(newSection), h("h2", null, t("New game")),
      h("form", { onsubmit: startGame },
        h("label", { for: "game" }, t("Game")),
        h("select", { id: "game", onchange: function () { chooseGame(this.value); } }, catalogue.games.map(function (g) {
          return h("option", { value: g.id, selected: g.id === form.game }, g.title);
        })),
        h("label", null, t("Players"), h("span", { className: "hint" }, " (" + count + ")")),
        nameList, rows,
        form.players.length < game.max_players ? h("button", { type: "button", className: "wide", onclick: function () {
          form.players.push(""); form.touched = true; drawNewGame();
        } }, t("Add a player")) : null,
        chips.length && (form.players.indexOf("") >= 0 || form.players.length < game.max_players) ? [h("p", { className: "hint" }, t("Tap a name to add it:")),
          h("div", { className: "names" }, chips.map(function (n) {
            return h("button", { type: "button", onclick: function () {
              var empty = form.players.indexOf("");
              if (empty >= 0) form.players[empty] = n;
              else if (form.players.length < game.max_players) form.players.push(n);
              form.touched = true;
              drawNewGame();
            } }, n);
          }))] : null,
        Object.keys(game.options).length ? h("h2", { className: "sub" }, t("Options")) : null,
        Object.keys(game.options).map(function (key) { return optionInput(key, game.options[key]); }),
        asking ? overWhat(function () { asking = false; startGame(null, true); },
                          function () { asking = false; drawNewGame(); document.getElementById("start").focus(); })
          : null,
        h("button", { type: "submit", className: "primary wide", id: "start", hidden: asking }, t("Start the game"))));
  }

  // -- a new game over one not finished: asked once, naming what happens ------------------
  // "The Third Man (Ann, Ben, Chloé, Dan), round 2, stays in History as
  // unfinished": nothing is lost (History resumes it), but the table leaves it.
  var asking = false;
  function unfinished() { return !!(state.game && !state.finished && (state.players || []).length); }

  function lostText() {
    var lines = [C.leftUnfinished(state)];
    if (seats.some(function (x) { return x.claimed; })) lines.push(t("The phones' seats are released."));
    return lines;
  }

  function overWhat(yes, no) {
    var lines = lostText();
    return h("div", { className: "confirm", id: "start-confirm", role: "group", "aria-labelledby": "start-prompt" },
      h("p", { className: "prompt", id: "start-prompt" }, t("Start a new game?")),
      lines.map(function (line) { return h("p", null, line); }),
      h("button", { type: "button", className: "danger wide", id: "start-yes", onclick: yes }, t("Start the new game")),
      h("button", { type: "button", className: "wide", id: "start-no", onclick: no }, t("Cancel")));
  }

  function startGame(e, confirmed) {
    if (e) e.preventDefault();
    if (!C.pin.get()) {
      newSection.appendChild(msg);
      C.message(msg, t("Enter the table PIN first."), "error");
      return;
    }
    if (unfinished() && !confirmed) {
      asking = true;
      drawNewGame();
      document.getElementById("start-no").focus();         // the safe answer first
      return;
    }
    var options = {};
    var bad = null;
    Object.keys(form.options).forEach(function (key) {
      var v = form.options[key];
      if (v && typeof v === "object" && "json" in v) {
        try { options[key] = JSON.parse(v.json); } catch (err) { bad = t("'{name}' is not valid JSON", { name: key }); }
      } else options[key] = v;
    });
    if (bad) { newSection.appendChild(msg); C.message(msg, bad, "error"); return; }
    var action = { type: "new_game", game: form.game, players: form.players.map(function (p) { return p.trim(); }).filter(Boolean) };
    if (Object.keys(options).length) action.options = options;
    send("POST", "/api/actions", action, t("Started."), newSection).then(function (r) {
      if (!r.ok) return;
      form.touched = false;                 // the next game starts from this one's players
      // The new game is what the table does now: the form folds away, "Started." stays in sight.
      if (newFold) newFold.open = false;
      current.appendChild(msg);
      msg.scrollIntoView({ block: "nearest" });
    });
  }

  // -- any action as JSON ----------------------------------------------------------------------
  var actionSection = document.getElementById("action-section");
  var text = h("textarea", { id: "action-json", spellcheck: "false", autocapitalize: "off" });
  function drawAction() {
    var examples = (EXAMPLES[state.game] || []).concat(EXAMPLES.any);
    C.replace(body(actionSection), h("h2", null, t("Any action")),
      h("label", { for: "action-json", className: "hint" }, t("One action as JSON, checked by the box.")),
      h("form", { onsubmit: function (e) {
        e.preventDefault();
        var action;
        try { action = JSON.parse(text.value); } catch (err) {
          actionSection.appendChild(msg);
          C.message(msg, t("not valid JSON: {detail}", { detail: err.message }), "error");
          return;
        }
        send("POST", "/api/actions", action, undefined, actionSection);
      } }, text,
        h("p", { className: "hint" }, t("Examples")),
        h("div", { className: "names" }, examples.map(function (ex) {
          return h("button", { type: "button", onclick: function () { text.value = ex; } }, JSON.parse(ex).type);
        })),
        h("button", { type: "submit", className: "primary wide", id: "send-action" }, t("Send"))));
  }

  // -- the club hub's tournament table ---------------------------------------------------------
  // Shown only while the hub seats this table and its game is not started yet
  // (GET /api/hub's "offer": the box's feeder says so, no request to the hub).
  var hubSection = document.getElementById("hub-offer-section");
  var hubAsking = false;
  function startTournament(offer) {
    send("POST", "/api/actions", { type: "new_game", game: offer.game, players: offer.players },
         t("Started."), hubSection).then(drawHubOffer);
  }
  function drawHubOffer() {
    C.api("GET", "/api/hub").then(function (r) {
      var offer = r.ok && r.body.configured ? r.body.offer : null;
      if (!offer && msg.parentNode === hubSection) current.appendChild(msg);   // "Started." stays in sight
      hubSection.hidden = !offer;
      if (!offer) return C.replace(body(hubSection));
      C.replace(body(hubSection), h("h2", null, t("Tournament round {round}, table {table}", { round: offer.round, table: offer.table })),
        h("p", null, offer.players.join(", ")),
        hubAsking ? overWhat(function () { hubAsking = false; startTournament(offer); },
                             function () { hubAsking = false; drawHubOffer(); }) : null,
        h("button", { type: "button", className: "primary wide", id: "start-tournament", hidden: hubAsking, onclick: function () {
          if (unfinished()) { hubAsking = true; drawHubOffer(); return; }
          startTournament(offer);
        } }, t("Start the tournament table")));
    });
  }
  setInterval(drawHubOffer, 30000);

  // -- live ------------------------------------------------------------------------------------
  var lastGame = state.game, lastPlayers = JSON.stringify(state.players || []);
  var announce = C.announcer();
  announce(state);
  var clockSection = document.getElementById("clock-section");
  var clockFold = document.getElementById("clock-fold");
  var clock = clockSection && C.turnClock ? C.turnClock(clockSection, { me: null, control: true, send: function (path, body) {
    if (!C.pin.get()) return Promise.resolve({ ok: false, error: t("Enter the table PIN first.") });
    return C.api("POST", path, body, pinHeaders());
  } }) : null;
  if (clock) clock.state(state);
  C.live({
    clock: function (l) {
      if (clock) clock.clock(l);
      if (clockFold && l && l.banks && state.clock) clockFold.open = true;     // a clock that runs is in sight
    },
    state: function (s) {
      var was = state;
      state = s;
      // No game going on any more (over, or none): the new game's form opens.
      if (newFold && (!s.game || s.finished) && (was.game !== s.game || !was.finished)) newFold.open = true;
      if (asking && !unfinished()) { asking = false; drawNewGame(); }
      announce(s);
      if (clock) clock.state(s);
      drawCurrent();
      if (C.entry) C.entry.state(s);
      if (s.game !== lastGame) { lastGame = s.game; drawAction(); drawHubOffer(); }
      if (JSON.stringify(s.players || []) !== lastPlayers) { lastPlayers = JSON.stringify(s.players || []); reloadNames(); }
    },
    seats: function (list) { seats = list; drawSeats(); }
  });
  drawPin();
  drawCurrent();
  drawSeats();
  drawAction();
  drawHubOffer();
  C.api("GET", "/api/games").then(function (r) {
    if (!r.ok) return;
    catalogue = r.body;
    chooseGame(state.game && gameById(state.game) ? state.game : catalogue.games[0].id, state.players || []);
  });
})();
