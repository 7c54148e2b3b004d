/* The scoreboard: the generic part of any game (names, scores, who leads,
   finished/winner), the game's own details (games.js), the chart and the
   history.  Used by "/" and, without the chart, by the seat pages.

   The state comes with every `state` event; the history (for the chart and
   the round tables) is fetched from /api/history/current after each change, one
   request at a time. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;

  // The steps still in effect, each with its whole state and the one before.
  C.rebuild = function (history) {
    var out = [];
    var current = null;
    (history.steps || []).forEach(function (step) {
      var state = Object.assign({}, current || {}, step.state);
      out.push({ n: step.n, action: step.action, state: state, before: current });
      current = state;
    });
    return out;
  };

  // A name with a word a narrow phone cannot hold whole (more than 11
  // letters) may break inside it; other names break between words only.
  function longWord(name, most) {
    return String(name).split(/[\s\-]+/).some(function (w) { return Array.from(w).length > (most || 11); });
  }
  C.longWord = longWord;

  // -- what just happened ------------------------------------------------------------
  // The result of the last entry when it ended a round, a hand or a trick
  // (games.js result()), kept on the board until the next entry, as the box
  // keeps its result screen: the scores that went back to 0 for the next
  // round are not all the table sees.  It comes from the history's last
  // entry when that is the state shown (a page opened, an undo that brings a
  // round's end back), else from the state heard just before this one.
  function stable(value) {
    if (Array.isArray(value)) return "[" + value.map(stable).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).filter(function (k) { return k !== "clock"; }).sort().map(function (k) {
        return JSON.stringify(k) + ":" + stable(value[k]);
      }).join(",") + "}";
    }
    return JSON.stringify(value);
  }
  function sameTable(a, b) {
    return a && b && a.game === b.game && JSON.stringify(a.players) === JSON.stringify(b.players);
  }
  function resultOf(before, s, action) {
    if (!sameTable(before, s)) return null;
    var game = C.gameOf(s);
    try { return game.result ? game.result(before, s, action || null) : null; } catch (e) { return null; }
  }
  // The last step that is an entry (the turn clock's handovers are not).
  function lastEntry(steps) {
    for (var i = (steps || []).length - 1; i > 0; i--) {
      if (steps[i].action && steps[i].action.type !== "clock") return steps[i];
    }
    return null;
  }
  var heard = { key: null, result: null, prev: null };
  C.justHappened = function (s, steps) {
    if (!s || !s.game) return null;
    var key = stable(s);
    var entry = lastEntry(steps);
    if (entry && entry.before && stable(entry.state) === key) {
      heard.result = resultOf(entry.before, entry.state, entry.action);
    } else if (heard.key !== key) {
      heard.result = resultOf(heard.prev, s, null);
    }
    if (heard.key !== key) { heard.key = key; heard.prev = s; }
    return heard.result;
  };

  function justCard(r, s) {
    if (!r) return null;
    return h("section", { className: "card just", role: "group", "aria-labelledby": "just-title" },
      h("h2", { id: "just-title", className: "just-title" }, r.title),
      (r.lines || []).map(function (line) { return h("p", { className: "just-line" }, line); }),
      r.seats && r.seats.length ? h("ul", { className: "just-seats" }, r.seats.map(function (e) {
        return h("li", { className: e.strong ? "strong" : null, dataset: { seat: String(e.seat) } },
          C.dot(e.seat), "\u00A0", h("span", { className: "pname" + (longWord(s.players[e.seat]) ? " long-word" : "") },
            s.players[e.seat]), " ", h("span", { className: "num" }, e.text));
      })) : null);
  }
  C.justCard = justCard;

  // -- the game's name ----------------------------------------------------------------
  // A free scoreboard game the table named at its start ("Carcassonne") is
  // called by that name: the page's boot data says it for the game at the
  // table, the history's first step (its new_game) for any game after it.
  var boot = C.boot || {};
  var named = { game: boot.state && boot.state.game, players: JSON.stringify(boot.state && boot.state.players),
                name: boot.game_name || null };
  function nameIn(action) {
    var options = action && action.options;
    var name = options && typeof options.name === "string" ? options.name.trim() : "";
    return action && action.game === "scoreboard" && name ? name : null;
  }
  C.gameTitle = function (s, steps) {
    var first = steps && steps.length ? steps[0].action : null;
    if (first && first.type === "new_game") {
      named = { game: first.game, players: JSON.stringify(first.players), name: nameIn(first) };
    }
    var ours = named.game === s.game && named.players === JSON.stringify(s.players);
    return (ours && named.name) || C.title(s.game);
  };

  // The board draws the card in a slot of its own; renderDetails fills it
  // again when the history it brings tells more (a seat page draws the
  // board before the history comes).
  var slot = null, titleNode = null;
  function fillSlot(s, steps) {
    if (slot && slot.isConnected) C.replace(slot, justCard(C.justHappened(s, steps), s));
    if (titleNode && titleNode.isConnected) titleNode.textContent = C.gameTitle(s, steps);
  }

  C.renderBoard = function (root, s, options) {
    options = options || {};
    if (!s.game) {
      return C.replace(root, h("p", { className: "empty" },
        t("No game yet."), " ", t("Start one from the box or from the table control.")));
    }
    var game = C.gameOf(s);
    var winners = s.winner || [];
    var banner = null;
    if (s.finished) {
      banner = h("p", { className: "banner done", role: "status" }, t("Game over"), " \u2014 ",
        winners.length === 1 ? t("{name} wins!", { name: s.players[winners[0]] })
                             : t("Shared win: {names}", { names: C.names(s, winners) }));
    }
    var columns = game.columns(s);
    var lead = null, best = null;
    s.scores.forEach(function (v, seat) {
      if (best === null || v > best) { best = v; lead = seat; } else if (v === best) { lead = null; }
    });
    var table = h("table", { className: "board" },
      h("thead", null, h("tr", null, h("th", null), h("th", { className: "name" }, t("Player")),
        h("th", { className: "num" }, t("Score")),
        columns.map(function (col) { return h("th", { className: "num extra" }, col.head); }))),
      h("tbody", null, s.players.map(function (player, seat) {
        var chips = game.markers(s, seat);
        if (winners.indexOf(seat) >= 0) chips = [t("winner")].concat(chips);
        var cls = "seat-row" + (winners.indexOf(seat) >= 0 ? " won" : "") +
          (!s.finished && seat === lead && s.scores.some(Boolean) ? " ahead" : "") +
          (game.rowClass ? " " + game.rowClass(s, seat) : "") + (seat === options.me ? " me" : "");
        return h("tr", { className: cls, dataset: { seat: String(seat) } },
          h("td", null, C.dot(seat)),
          h("td", { className: "name" }, h("span", { className: "pname" + (longWord(player) ? " long-word" : "") }, player),
            chips.map(function (chip) { return typeof chip === "string" ? h("span", { className: "chip" }, chip) : chip; }),
            game.sub ? h("div", { className: "sub" }, game.sub(s, seat)) : null,
            // The same as the extra columns, under the name: what a narrow phone shows instead (CSS).
            columns.length ? h("div", { className: "sub extras" }, columns.map(function (col, i) {
              return h("span", { className: "extra-item" }, i ? " \u00B7 " : null, C.label(col.head), " ", col.cell(seat));
            })) : null),
          h("td", { className: "num score" }, C.number(s.scores[seat])),
          columns.map(function (col) { return h("td", { className: "num extra" }, col.cell(seat)); }));
      })));
    var status = game.status(s);
    slot = h("div", { className: "just-slot" }, justCard(C.justHappened(s, options.steps), s));
    titleNode = h("h1", { className: "game-title" }, C.gameTitle(s, options.steps));
    return C.replace(root, titleNode,
      banner, slot,
      status.length ? h("div", { className: "status" }, status.map(function (line, i) {
        return h("p", { className: i === 0 ? "status-main" : null }, line);
      })) : null,
      table);
  };

  C.renderDetails = function (root, s, steps, options) {
    options = options || {};
    if (!s.game) return C.replace(root);
    fillSlot(s, steps);
    var game = C.gameOf(s);
    var sections = game.sections(s, steps).map(function (sec) {
      return h("section", { className: "card " + (sec.className || "") }, h("h2", null, sec.title), sec.body);
    });
    var log = null;
    if (options.log !== false) {
      var lines = steps.slice(1).map(function (st) { return game.describe(st); }).filter(Boolean).reverse();
      if (lines.length) {
        var shown = lines.slice(0, 8);
        log = h("section", { className: "card" }, h("h2", null, t("History")),
          h("ol", { className: "log", reversed: true, start: String(lines.length) }, shown.map(function (line) { return h("li", null, line); })),
          lines.length > shown.length ? h("details", null, h("summary", null, t("Show all ({n})", { n: lines.length })),
            h("ol", { className: "log", reversed: true, start: String(lines.length) }, lines.map(function (line) { return h("li", null, line); }))) : null);
      }
    }
    if (options.logRoot) {
      C.replace(options.logRoot, log);
      return C.replace(root, sections);
    }
    return C.replace(root, sections, log);
  };

  C.renderChart = function (root, s, steps) {
    var series = s.game ? C.seriesOf(s, steps) : null;
    var moved = series && series.points.some(function (scores) { return scores.some(Boolean); });
    if (!s.game || steps.length < 2 || !moved) {
      root.hidden = true;
      return;
    }
    root.hidden = false;
    var svg = C.chart(series, s.players);
    // A wide chart (many rounds) scrolls sideways in a box a keyboard can reach, latest rounds first.
    var box = h("div", { className: "chart-scroll" }, svg);
    if (svg.getAttribute("class").indexOf("wide") >= 0) {
      box.className += " scroll";
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", t("Scores over time"));
      C.scrollToEnd(box);
    }
    C.replace(root, h("h2", null, t("Scores over time")), box,
      h("ul", { className: "legend" }, s.players.map(function (p, seat) {
        return h("li", null, C.lineSample(seat), " ", legendName(s.players, seat));
      })));
  };

  // A legend entry: the whole name, with the mark that ends its line on the
  // chart in bold -- inside the name when the mark is its start ("Marc-Antoine"
  // with "Mar" bold for "Mar…"), else after it ("Élodie-Françoise Łukasz (ÉFŁ)").
  // Never a cut name next to the whole one.
  function legendName(players, seat) {
    var p = String(players[seat]), mark = C.marks(players)[seat];
    if (mark === p) return p;
    var start = mark.replace(/\u2026$/, "");
    if (start && p.slice(0, start.length) === start) {
      return h("span", { className: "legend-name" }, h("strong", { className: "mark" }, start), p.slice(start.length));
    }
    return h("span", { className: "legend-name" }, p, " (", h("strong", { className: "mark" }, mark), ")");
  }

  // Says aloud (C.announce) what changed between two states of the same
  // game: a reveal, a round or hand that ended, the game's end.  Only what is
  // public: the reveal is what the page shows anyway.
  C.announcer = function () {
    var prev = null;
    return function (s) {
      var before = prev;
      prev = s;
      if (!before || !s.game || before.game !== s.game || JSON.stringify(before.players) !== JSON.stringify(s.players)) return;
      var lines = [];
      var shown = s.game === "third-man" ? s.last && s.last.cards : s.reveal;
      var shownBefore = before.game === "third-man" ? before.last && before.last.cards : before.reveal;
      if (shown && JSON.stringify(shown) !== JSON.stringify(shownBefore)) {
        lines.push(t("Revealed: {cards}", { cards: s.players.map(function (p, seat) {
          var pts = s.game === "third-man" && !s.last.annulled ? " (" + C.signed(s.last.points[seat]) + ")" : "";
          return p + " " + C.number(shown[seat]) + pts;
        }).join(", ") }));
        if (s.game === "third-man" && s.last.annulled) lines.push(t("Annulled: bid again"));
      }
      [["rounds", "Round {n} over"], ["hands", "Hand {n} over"]].forEach(function (kind) {
        var now = s[kind[0]], then = before[kind[0]];
        if (Array.isArray(now) && Array.isArray(then) && now.length > then.length) {
          var done = now[now.length - 1];
          lines.push(done && typeof done.token === "number" && s.players[done.token]
            ? C.label(t(kind[1], { n: now.length })) + " " + t("{name} takes a token", { name: s.players[done.token] })
            : t(kind[1], { n: now.length }));
        }
      });
      if (s.finished && !before.finished) {
        var winners = s.winner || [];
        lines.push(t("Game over") + (winners.length === 1 ? " \u2014 " + t("{name} wins!", { name: s.players[winners[0]] })
          : winners.length ? " \u2014 " + t("Shared win: {names}", { names: C.names(s, winners) }) : ""));
      }
      if (lines.length) C.announce(lines.join(". "));
    };
  };

  // The history follows the state: fetched after each change, one request
  // at a time, the last change always fetched.
  C.historyFollower = function (onHistory) {
    var busy = false, again = false;
    function fetchNow() {
      if (busy) { again = true; return; }
      busy = true;
      C.api("GET", "/api/history/current").then(function (r) {
        busy = false;
        if (r.ok) onHistory(r.body);
        if (again) { again = false; fetchNow(); }
      });
    }
    return fetchNow;
  };

  C.startBoard = function () {
    var board = document.getElementById("board");
    var chart = document.getElementById("chart");
    var details = document.getElementById("details");
    var log = document.getElementById("log");
    var state = C.boot.state;
    var steps = [];
    var seen = null;

    function draw() {
      C.renderBoard(board, state, { steps: steps });
      C.renderDetails(details, state, steps, { logRoot: log });
      C.renderChart(chart, state, steps);
    }
    var refresh = C.historyFollower(function (history) {
      steps = history.game === state.game ? C.rebuild(history) : [];
      draw();
      C.historyDrawn = true;              // the page is whole (a test waits for it, not for a time)
    });
    var announce = C.announcer();
    announce(state);
    // The turn clock, read only here (no seat, no PIN): it is the box's,
    // ended and paused from the box, the seat pages and the table control.
    var clockSection = document.getElementById("clock-section");
    var clock = clockSection && C.turnClock ? C.turnClock(clockSection, { me: null, control: false,
      send: function () { return Promise.resolve({ ok: false }); } }) : null;
    if (clock) clock.state(state);
    C.live({
      clock: function (live) { if (clock) clock.clock(live); },
      state: function (s) {
        if (clock) clock.state(s);
        var text = JSON.stringify(s);
        if (text === seen) return;          // a reconnect's resync with nothing new
        seen = text;
        state = s;
        announce(s);
        draw();
        refresh();
      }
    });
    draw();
  };

  if (C.boot.page === "board") C.startBoard();
})();
