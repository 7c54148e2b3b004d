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
    return C.replace(root,
      h("h1", { className: "game-title" }, C.title(s.game)),
      status.length ? h("div", { className: "status" }, status.map(function (line, i) {
        return h("p", { className: i === 0 ? "status-main" : null }, line);
      })) : null,
      banner, table);
  };

  C.renderDetails = function (root, s, steps, options) {
    options = options || {};
    if (!s.game) return C.replace(root);
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
      C.renderBoard(board, state);
      C.renderDetails(details, state, steps, { logRoot: log });
      C.renderChart(chart, state, steps);
    }
    var refresh = C.historyFollower(function (history) {
      steps = history.game === state.game ? C.rebuild(history) : [];
      draw();
    });
    var announce = C.announcer();
    announce(state);
    C.live({
      state: function (s) {
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
