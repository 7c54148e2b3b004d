/* The seat pages.

   /seat      the seats of the game: a free one is claimed with the table PIN
              (asked once, kept for the box's address:
              common.js); the seat token the box
              answers is kept in localStorage, so a reload keeps the seat.
   /seat/<n>  that seat's private view (GET /api/seats/<n>/view with the
              token, fetched again after each change: an EventSource cannot
              send headers) and its secret entry.  Whichever comes first, the
              box's buttons or this page, counts: the view then shows the
              locked entry, from wherever it came.  In the free scoreboard,
              every seat's points and tokens too (points.js), sent with the
              table PIN as the box's buttons would: the seat token enters
              only this seat's own secret.  Releasing the seat asks once. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;
  var boot = C.boot;

  function pinField(id) {
    return h("input", { id: id, type: "password", inputmode: "numeric", autocomplete: "off", "data-testid": "pin",
                        maxlength: "8", placeholder: "\u2022\u2022\u2022\u2022", value: C.pin.get(), enterkeyhint: "go" });
  }

  // Claim ``seat`` with the PIN typed (or kept); on success keep the token.
  function claim(seat, pin, label, msg) {
    if (!pin) { C.message(msg, t("Enter the table PIN first."), "error"); return Promise.resolve(false); }
    C.message(msg, t("Sending…"));
    return C.api("POST", "/api/seats/" + seat + "/claim", label ? { name: label } : undefined, { "X-Table-Pin": pin })
      .then(function (r) {
        if (!r.ok) {
          if (r.status === 403) C.pin.clear();
          C.message(msg, r.error, "error");
          return false;
        }
        C.pin.set(pin);
        C.seatToken.set(seat, r.body.token);
        C.message(msg, "");
        return true;
      });
  }

  function claimForm(seat, msg, done) {
    var pin = pinField("pin-" + seat);
    var label = h("input", { id: "label-" + seat, type: "text", maxlength: "24", placeholder: t("phone") });
    return h("form", { className: "claim", onsubmit: function (e) {
      e.preventDefault();
      claim(seat, pin.value.trim(), label.value.trim(), msg).then(function (ok) { if (ok) done(); });
    } },
      h("label", { for: "pin-" + seat }, t("Table PIN")), pin, h("p", { className: "hint" }, t("The PIN is shown on the box.")),
      h("label", { for: "label-" + seat }, t("Name of this phone (shown on the box)")), label,
      h("button", { type: "submit", className: "primary wide" }, t("Take this seat")));
  }

  // -- /seat: the list ---------------------------------------------------------------
  function startList() {
    var listNode = document.getElementById("seat-list");
    var msg = document.getElementById("seat-msg");
    var pinBox = document.getElementById("pin-box");
    var seats = boot.seats;
    var state = boot.state;
    var pin = pinField("pin");
    // Enter keeps the PIN typed and goes on to the first free seat's button.
    pin.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") return;
      e.preventDefault();
      if (!pin.value.trim()) return;
      C.pin.set(pin.value.trim());
      var free = listNode.querySelector("button[data-seat]");
      if (free) free.focus();
      C.message(msg, free ? t("Now tap a free seat.") : t("No seat is free."), free ? "ok" : "error");
    });
    var label = h("input", { id: "label", type: "text", maxlength: "24", placeholder: t("phone") });
    C.replace(pinBox,
      h("label", { for: "pin" }, t("Table PIN")), pin, h("p", { className: "hint" }, t("The PIN is shown on the box.")),
      h("label", { for: "label" }, t("Name of this phone (shown on the box)")), label);

    function draw() {
      if (!state.game || !seats.length) {
        return C.replace(listNode, h("li", null, t("No game yet.")));
      }
      C.replace(listNode, seats.map(function (s) {
        var mine = s.claimed && C.seatToken.get(s.seat);
        var action;
        if (mine) action = h("a", { className: "button primary fixed", href: "/seat/" + s.seat }, t("Open"));
        else if (!s.claimed) action = h("button", { type: "button", className: "primary fixed", dataset: { seat: String(s.seat) },
          onclick: function () {
            claim(s.seat, pin.value.trim(), label.value.trim(), msg).then(function (ok) {
              if (ok) window.location.href = "/seat/" + s.seat;
            });
          } }, t("Take this seat"));
        return h("li", null, C.dot(s.seat), h("span", { className: "who" }, h("strong", null, s.player),
          mine ? t("yours") : s.claimed ? t("taken by {label}", { label: s.label }) : t("free")), action);
      }));
    }
    C.live({
      state: function (s) { state = s; draw(); },
      seats: function (list) { seats = list; draw(); }
    });
    draw();
  }

  // -- /seat/<n>: one seat ------------------------------------------------------------
  function startSeat() {
    var me = boot.seat;
    var panel = document.getElementById("private");
    var board = document.getElementById("board");
    var details = document.getElementById("details");
    var head = document.getElementById("seat-head");
    var state = boot.state;
    var seats = boot.seats;
    var steps = [];
    var view = null;             // the latest private view
    var selected = null;         // a card tapped, not yet confirmed
    var notice = "";             // one line about the claim (released, ended)
    var panelKey = null;
    var msg = h("p", { className: "msg", hidden: true });
    var fetching = false, fetchAgain = false;

    function token() { return C.seatToken.get(me); }
    function claimOf() {
      for (var i = 0; i < seats.length; i++) if (seats[i].seat === me) return seats[i];
      return null;
    }

    function fetchView() {
      if (!token()) { view = null; drawPanel(); return; }
      if (fetching) { fetchAgain = true; return; }
      fetching = true;
      C.api("GET", "/api/seats/" + me + "/view", undefined, { "X-Seat-Token": token() }).then(function (r) {
        fetching = false;
        if (r.ok) {
          view = r.body;
        } else if (r.status === 403 || r.status === 401) {
          C.seatToken.clear(me);
          view = null;
          notice = t("This phone's claim has ended (released, or the box restarted).");
        }
        drawPanel();
        if (fetchAgain) { fetchAgain = false; fetchView(); }
      });
    }

    function send(action) {
      C.message(msg, t("Sending…"));
      return C.api("POST", "/api/actions", action, { "X-Seat-Token": token() }).then(function (r) {
        if (r.ok) { selected = null; C.message(msg, ""); fetchView(); }
        else C.message(msg, r.error, "error");
      });
    }

    function release() {
      C.api("POST", "/api/seats/" + me + "/release", undefined, { "X-Seat-Token": token() }).then(function (r) {
        C.seatToken.clear(me);
        if (r.ok || r.status === 403) window.location.href = "/seat";
        else C.message(msg, r.error, "error");
      });
    }

    // -- points and tokens for every seat (the free scoreboard), with the PIN ----------
    var pointsBox = h("section", { className: "card", id: "points-section", "aria-labelledby": "points-title", hidden: true });
    var points = null;
    var pinAsked = false;
    function sendWithPin(action) {
      if (!C.pin.get()) { drawPoints(); return Promise.resolve({ ok: false, error: t("Enter the table PIN first.") }); }
      return C.api("POST", "/api/actions", action, { "X-Table-Pin": C.pin.get() }).then(function (r) {
        if (r.status === 403) { C.pin.clear(); drawPoints(); }
        return r;
      });
    }
    function drawPoints() {
      // Over: the page says so already; kept only while it offers to undo the entry that ended it.
      var wanted = state.game === "scoreboard" && !!token() && me < (state.players || []).length &&
        (!state.finished || !!(points && points.offersUndo()));
      pointsBox.hidden = !wanted;
      if (!wanted) { points = null; pinAsked = false; return C.replace(pointsBox); }
      var needPin = !C.pin.get();
      if (points && needPin === pinAsked) { points.state(state); return; }
      pinAsked = needPin;
      points = C.pointsPanel({ me: me, send: sendWithPin });
      points.state(state);
      var pinForm = null;
      if (needPin) {
        var field = pinField("points-pin");
        pinForm = h("form", { onsubmit: function (e) {
          e.preventDefault();
          if (!field.value.trim()) return;
          C.pin.set(field.value.trim());
          drawPoints();
          var first = document.getElementById("points-0");
          if (first) first.focus();
        } }, h("label", { for: "points-pin" }, t("Table PIN")),
          h("div", { className: "row" }, field, h("button", { type: "submit", className: "primary fixed" }, t("Save PIN"))),
          h("p", { className: "hint" }, t("Points for every player need the table PIN, shown on the box.")));
      }
      C.replace(pointsBox, h("h2", { id: "points-title" }, t("Points")), pinForm, points.node);
    }

    function drawHead() {
      var name = state.players && me < state.players.length ? state.players[me] : t("Your seat");
      C.replace(head, C.dot(me), h("h1", null, name));
    }

    function drawPanel() {
      var content, key;
      if (!state.game || me >= (state.players || []).length) {
        key = "none";
        content = [h("p", { className: "prompt" }, t("There is no seat {n} in this game.", { n: me + 1 })),
          h("a", { className: "button wide", href: "/seat" }, t("Back to the seats"))];
      } else if (!token()) {
        var c = claimOf();
        key = "claim:" + JSON.stringify(c) + notice;
        if (c && c.claimed) {
          content = [notice ? h("p", null, notice) : null,
            h("p", { className: "prompt" }, t("This seat is taken by another phone ({label}). The PIN holder can release it.", { label: c.label })),
            h("a", { className: "button wide", href: "/seat" }, t("Back to the seats"))];
        } else {
          content = [notice ? h("p", null, notice) : null,
            h("p", { className: "prompt" }, t("This phone does not hold seat {n}.", { n: me + 1 })),
            claimForm(me, msg, function () { notice = ""; fetchView(); })];
        }
      } else if (!view) {
        key = "loading";
        content = [h("p", { className: "muted" }, t("Sending…"))];
      } else {
        // An entry made on the box's buttons or with the PIN is not this phone's to read
        // (the seat may have been claimed by anyone who read the PIN).
        var entry = view.entered_at_table ? { key: "box", node: h("p", { className: "entered" },
          t("Entered at the table ✓ — no phone sees it until the reveal")) } : (ENTRY[view.game] || noEntry)(view);
        key = "entry:" + entry.key + ":" + selected;
        content = [entry.node];
      }
      if (key === panelKey) return;          // keep a half-typed number as it is
      panelKey = key;
      C.replace(panel, content, msg);
      releaseBox.hidden = !token();
      drawPoints();
    }

    // Giving the seat up is rare: at the foot of the page, away from the cards,
    // and asked once, saying what happens.
    var releaseBox = h("section", { className: "release", hidden: true });
    function drawRelease(asking) {
      var name = state.players && me < state.players.length ? state.players[me] : "";
      if (!asking) {
        C.replace(releaseBox, h("button", { type: "button", className: "danger wide", id: "release", onclick: function () {
          drawRelease(true);
          document.getElementById("release-no").focus();          // the safe answer first
        } }, t("Release this seat")));
        return;
      }
      C.replace(releaseBox, h("div", { className: "confirm", role: "group", "aria-labelledby": "release-prompt" },
        h("p", { className: "prompt", id: "release-prompt" },
          t("Give up seat {n} ({name})? This phone stops reading and entering for it; what it entered stays. A phone with the PIN can take it again.",
            { n: me + 1, name: name })),
        h("button", { type: "button", className: "danger wide", id: "release-yes", onclick: release }, t("Release the seat")),
        h("button", { type: "button", className: "wide", id: "release-no", onclick: function () {
          drawRelease(false);
          document.getElementById("release").focus();
        } }, t("Cancel"))));
    }
    drawRelease(false);
    details.parentNode.appendChild(releaseBox);
    panel.parentNode.insertBefore(pointsBox, panel.nextSibling);

    // -- what each game lets a seat enter -------------------------------------------
    function handButtons(hand, onPick, disabled) {
      return h("div", { className: "hand", role: "group", "aria-label": t("Your hand") }, hand.map(function (card) {
        return h("button", { type: "button", "aria-pressed": selected === card ? "true" : "false", disabled: !!disabled,
          dataset: { card: String(card) }, onclick: function () { onPick(card); } }, String(card));
      }));
    }

    function pickAndConfirm(v, prompt, confirmText) {
      var node = [h("p", { className: "prompt" }, prompt),
        handButtons(v.hand, function (card) {
          selected = card;
          drawPanel();
          // The next step is the confirm button: a keyboard (or screen reader) goes straight to it.
          var confirm = panel.querySelector("button.confirm");
          if (confirm) confirm.focus();
        })];
      if (selected !== null && v.hand.indexOf(selected) >= 0) {
        node.push(h("button", { type: "button", className: "primary wide confirm", onclick: function () {
          send({ type: "bid", seat: me, card: selected });
        } }, t(confirmText, { card: selected })));
      } else {
        node.push(h("p", { className: "hint" }, t("Tap a card, then confirm.")));
      }
      return node;
    }

    var ENTRY = {
      "third-man": function (v) {
        var p = v.pending;
        var key = JSON.stringify([v.finished, v.round, v.bids, v.lead, p.lead_card, v.locked, v.hand]);
        if (v.finished) return { key: key, node: h("p", { className: "prompt" }, t("The match is over.")) };
        var lead = v.players[v.lead];
        if (p.lead_card === null) {
          if (v.lead === me) return { key: key, node: pickAndConfirm(v, t("You lead: show a card (everyone sees it)."), "Show {card}") };
          return { key: key, node: [h("p", { className: "prompt" }, t("Waiting for {name} to show a card.", { name: lead })),
            h("p", { className: "hint" }, t("Your hand")), handButtons(v.hand, function () {}, true)] };
        }
        if (v.lead === me) return { key: key, node: h("p", { className: "locked" }, t("You showed {card}.", { card: p.lead_card })) };
        if (v.locked !== null && v.locked !== undefined) {
          return { key: key, node: [h("p", { className: "locked" }, t("Your card: {card}", { card: "" }),
            h("span", { className: "value", id: "locked-card" }, String(v.locked))),
            h("p", { className: "entered" }, t("locked ✓ — nobody else sees it until the reveal"))] };
        }
        return { key: key, node: pickAndConfirm(v, t("{name} shows {card}. Pick your secret card:", { name: lead, card: p.lead_card }), "Lock {card}") };
      },

      scoreboard: function (v) {
        var key = JSON.stringify([v.finished, v.secret]);
        if (v.finished) return { key: key, node: h("p", { className: "prompt" }, t("Game over")) };
        if (v.secret) {
          return { key: key, node: [h("p", { className: "locked" }, t("Your secret: {value}", { value: "" }),
            h("span", { className: "value", id: "locked-card" }, C.number(v.secret.value))),
            h("p", { className: "entered" }, t("locked ✓ — nobody else sees it until the reveal"))] };
        }
        var input = h("input", { id: "secret-value", type: "text", inputmode: "numeric", pattern: "-?[0-9]*", autocomplete: "off" });
        return { key: key, node: h("form", { onsubmit: function (e) {
          e.preventDefault();
          var text = input.value.trim().replace("\u2212", "-");
          if (!/^-?\d+$/.test(text)) { C.message(msg, t("Enter a whole number."), "error"); return; }
          send({ type: "secret", seat: me, value: parseInt(text, 10) });
        } }, h("label", { for: "secret-value" }, t("Enter a secret number")), input,
          h("button", { type: "submit", className: "primary wide" }, t("Enter secretly"))) };
      },

      diabolo: function (v) {
        var key = JSON.stringify([v.finished, v.round, v.doubles_left[me], v.secret, v.decided && v.decided.color, v.scored]);
        if (v.finished) return { key: key, node: h("p", { className: "prompt" }, t("Game over")) };
        if (v.secret) {
          return { key: key, node: [h("p", { className: "locked" },
            t(v.secret.play ? "Your decision for {color}: play the double" : "Your decision for {color}: keep it", { color: C.colour(v.secret.color) })),
            h("p", { className: "entered" }, t("locked ✓ — nobody else sees it until the reveal"))] };
        }
        if (!v.doubles_left[me]) return { key: key, node: h("p", { className: "prompt" }, t("Your double is spent for this round.")) };
        var fixed = v.decided ? v.decided.color : null;
        var colours = knownColours(v);
        // The field shows colours in this phone's language; what is sent is
        // the game's own name for that colour (C.colourValue).
        var input = h("input", { id: "colour", type: "text", list: "colours", value: fixed ? C.colour(fixed) : "", readonly: fixed ? true : null });
        function decide(play) {
          var named = input.value.trim();
          if (!named) { C.message(msg, t("Name the colour being scored."), "error"); return; }
          var color = fixed || C.colourValue(named, gameColours(v));
          send({ type: "double", seat: me, color: color, play: play });
        }
        return { key: key + colours.join(","), node: [
          h("label", { for: "colour" }, t("Colour")), input,
          h("datalist", { id: "colours" }, colours.map(function (c) { return h("option", { value: C.colour(c) }); })),
          fixed ? null : h("div", { className: "names" }, colours.map(function (c) {
            return h("button", { type: "button", onclick: function () { input.value = C.colour(c); } }, C.colour(c));
          })),
          h("button", { type: "button", className: "primary wide", id: "double-play", onclick: function () { decide(true); } },
            t("Play my double on {color}", { color: fixed ? C.colour(fixed) : "\u2026" })),
          h("button", { type: "button", className: "wide", id: "double-keep", onclick: function () { decide(false); } }, t("Keep it"))] };
      }
    };

    function noEntry() {
      return { key: "none", node: h("p", { className: "prompt" }, t("Nothing secret to enter in this game: follow the scoreboard.")) };
    }

    // Diabolo's colours named so far in the game (its ``colors`` where the
    // view says them), and those not yet scored this round.
    function gameColours(v) {
      var seen = Array.isArray(v.colors) ? v.colors.slice() : [];
      steps.forEach(function (st) {
        var c = st.action.color;
        if (typeof c === "string" && seen.indexOf(c) < 0) seen.push(c);
      });
      return seen;
    }
    function knownColours(v) {
      return gameColours(v).filter(function (c) { return v.scored.indexOf(c) < 0; });
    }

    function drawPublic() {
      drawHead();
      drawPoints();
      C.renderBoard(board, state, { me: me });
      C.renderDetails(details, state, steps, { log: false });
    }

    var refreshHistory = C.historyFollower(function (history) {
      steps = history.game === state.game ? C.rebuild(history) : [];
      drawPublic();
      if (view && view.game === "diabolo") { panelKey = null; drawPanel(); }
    });

    var seen = null;
    var announce = C.announcer();
    announce(state);
    // The turn clock: this seat's token ends its own turn, pauses, goes on.
    var clockSection = document.getElementById("clock-section");
    var clock = clockSection && C.turnClock ? C.turnClock(clockSection, { me: me, control: false, send: function (path) {
      if (!token()) return Promise.resolve({ ok: false, error: t("This phone does not hold seat {n}.", { n: me + 1 }) });
      return C.api("POST", path, undefined, { "X-Seat-Token": token() });
    } }) : null;
    if (clock) clock.state(state);
    C.live({
      clock: function (l) { if (clock) clock.clock(l); },
      state: function (s) {
        var text = JSON.stringify(s);
        state = s;
        if (clock) clock.state(s);
        announce(s);
        drawPublic();
        fetchView();                          // always: the claim may have changed with it
        if (text !== seen) { seen = text; refreshHistory(); }
      },
      seats: function (list) {
        seats = list;
        var c = claimOf();
        // Released from the box or by the PIN holder?  The view's answer
        // (403 once the claim is gone) decides, not a possibly older event.
        if (token() && c && !c.claimed) fetchView();
        drawPanel();
      }
    });
    drawPublic();
    drawPanel();
    fetchView();
  }

  if (boot.page === "seats") startList();
  if (boot.page === "seat") startSeat();
})();
