/* What each game adds to the scoreboard, one renderer per game.

   Companion.games[id] = {
     columns(s)        -> [{head, cell(seat) -> text|node}]   extra columns of the board
     markers(s, seat)  -> [text]                               chips after a name ("leads")
     status(s)         -> [text|node]                          lines under the title
     sections(s, steps)-> [{title, body}]                      reveal, rounds, hands...
     series(steps)     -> {points, breaks, band}               the chart (optional)
     describe(step)    -> text or null                         one line of the history log
     result(before, s, action) -> {title, lines, seats} or null
                       what an entry just did when it ended a round, a hand
                       or a trick (as the box shows it): board.js keeps it on
                       the scoreboard until the next entry.  ``action`` may be
                       null (a change heard live, before the history comes).
                       seats: [{seat, text, strong}], one per seat it names.
   }
   ``s`` is the public state; ``steps`` the game's steps still in effect
   ([{n, action, state, before}], see board.js), possibly a change behind.
   Every rendering reads only the public state: no secret value ever
   reaches a public page. */
(function () {
  "use strict";
  var C = window.Companion;
  var h = C.h, t = C.t;
  var G = (C.games = {});

  // -- shared pieces ----------------------------------------------------------------
  function name(s, seat) { return s.players[seat]; }

  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

  // A table of players and rows (rounds, bids, hands...): one row per player,
  // the names in a column that stays put while the rounds scroll sideways
  // (a phone is narrower than twelve rounds).  The scrolling box is a named
  // region a keyboard can reach (tabindex) to scroll with the arrow keys;
  // it starts scrolled to the latest round.
  function seatTable(players, rows, firstHead, title) {
    var box = h("div", { className: "scroll table-scroll", tabindex: "0", role: "region",
                         "aria-label": title || firstHead || t("Players") },
      h("table", { className: "grid by-seat" },
        h("thead", null, h("tr", null, h("th", { scope: "col", className: "who" }, firstHead || t("Player")),
          rows.map(function (row) {
            return h("th", { scope: "col", className: "num" + (row.className ? " " + row.className : "") }, row.label);
          }))),
        h("tbody", null, players.map(function (p, seat) {
          // A no-break space keeps the dot with the name's first word.
          return h("tr", null, h("th", { scope: "row", className: "who" }, C.dot(seat), "\u00A0",
            h("span", { className: "pn" + (C.longWord && C.longWord(p, 14) ? " long-word" : "") }, p)),
            rows.map(function (row) {
              return h("td", { className: "num" + (row.className ? " " + row.className : "") }, row.cells[seat]);
            }));
        }))));
    C.scrollToEnd(box);
    return box;
  }

  function list(items) {
    return h("ul", { className: "plain" }, items.map(function (item) { return h("li", null, item); }));
  }

  function scoreSeries(steps) {
    return { points: steps.map(function (st) { return st.state.scores || []; }), breaks: [], band: null };
  }

  // Scores that restart each round or hand: the finished one's final scores
  // are drawn before the drop, with a break line labelled with the round that
  // starts there.  The round that ends the match is the last: no break and
  // no next round after it (an 8-round match has no "R9").
  function resetSeries(steps, doneKey, finalScores, label) {
    var out = { points: [], breaks: [], band: null };
    steps.forEach(function (st) {
      var done = st.state[doneKey] || [];
      if (st.before && done.length > (st.before[doneKey] || []).length) {
        out.points.push(finalScores(done[done.length - 1]));
        if (st.state.finished) return;
        out.breaks.push({ at: out.points.length, label: label + (done.length + 1) });
      }
      out.points.push(st.state.scores || []);
    });
    return out;
  }

  function tokenDots(n) {
    // Dots read at a glance up to three; more is a number and one dot (narrow phones).
    if (n > 3) return h("span", { className: "tokens" }, n + "\u00A0\u25CF");
    return h("span", { className: "tokens", role: "img", "aria-label": String(n) }, n ? "\u25CF".repeat(n) : "\u2013");
  }

  function chip(text, cls) { return h("span", { className: "chip " + cls }, text); }

  function capital(text) { return text.charAt(0).toUpperCase() + text.slice(1); }      // a heading's first letter
  function grew(before, s, key) { return (s[key] || []).length > ((before && before[key]) || []).length; }
  function last(list) { return list[list.length - 1]; }
  function everySeat(s, text, strong) {
    return s.players.map(function (_, seat) { return { seat: seat, text: text(seat), strong: !!(strong && strong(seat)) }; });
  }
  // "Round 2 over: Chloé takes a token" (the box's words, one line).
  function over(what, headline) { return C.label(what) + " " + headline; }
  function entered() { return chip(t("entered ✓"), "entered"); }

  // -- The Third Man ---------------------------------------------------------------
  // A bid ends with the step that clears the lead's face-up card.
  function thirdManBids(steps) {
    var bids = [];
    steps.forEach(function (st) {
      var b = st.before;
      if (b && st.action.type === "bid" && b.pending && b.pending.lead_card !== null &&
          st.state.pending.lead_card === null && st.state.last) {
        bids.push({ round: b.round, lead: b.lead, last: st.state.last });
      }
    });
    return bids;
  }

  function bidRow(s, bid, label) {
    return {
      label: label, className: bid.last.annulled ? "annulled" : null,
      cells: s.players.map(function (_, seat) {
        var card = bid.last.cards[seat];
        var text = bid.last.annulled ? String(card) : card + " (" + C.signed(bid.last.points[seat]) + ")";
        return seat === bid.lead ? h("strong", null, text) : text;
      })
    };
  }

  // Why a round ended (docs/rules.md): +20 or more, -20 or less, else the 9th bid.
  function thirdManReason(players, scores) {
    var high = 0, low = 0;
    scores.forEach(function (v, seat) { if (v > scores[high]) high = seat; if (v < scores[low]) low = seat; });
    if (scores[high] >= 20) return t("{name} reached +20", { name: players[high] });
    if (scores[low] <= -20) return t("{name} reached −20", { name: players[low] });
    return t("9 bids played");
  }

  G["third-man"] = {
    columns: function (s) {
      return [
        { head: t("Tokens"), cell: function (seat) { return tokenDots(s.tokens[seat]); } },
        { head: t("Cards"), cell: function (seat) { return String(s.hands[seat].length); } }
      ];
    },
    markers: function (s, seat) {
      if (s.finished) return [];
      var p = s.pending, out = [];
      if (seat === s.lead) out.push(t("leads"));
      if (p.lead_card !== null && seat === s.lead) out.push(chip(t("shows {card}", { card: p.lead_card }), "shown"));
      else if (p.entered.indexOf(seat) >= 0) out.push(entered());
      return out;
    },
    status: function (s) {
      if (s.finished) return [];
      var lines = [t("Round {r} · bid {b}", { r: s.round, b: s.bids + 1 })];
      var p = s.pending;
      if (p.lead_card === null) {
        lines.push(t("{name} leads: waiting for a card", { name: name(s, s.lead) }));
      } else {
        lines.push(t("{name} shows {card}", { name: name(s, s.lead), card: p.lead_card }));
        var missing = s.players.map(function (_, i) { return i; }).filter(function (i) {
          return i !== s.lead && p.entered.indexOf(i) < 0;
        });
        lines.push(missing.length ? t("Waiting for {names}", { names: C.names(s, missing) }) : t("All cards are in"));
      }
      return lines;
    },
    sections: function (s, steps) {
      var out = [];
      var bids = thirdManBids(steps);
      if (s.last) {
        var lastBid = bids.length ? bids[bids.length - 1] : null;
        var lead = lastBid && same(lastBid.last, s.last) ? lastBid.lead : null;
        out.push({ title: s.last.annulled ? t("Annulled: bid again") : t("Last bid"), className: "reveal",
          body: h("div", { className: "reveal-cards" }, s.players.map(function (p, seat) {
            return h("div", { className: "reveal-card" + (seat === lead ? " lead" : "") },
              h("div", { className: "who" }, C.dot(seat), " ", p),
              h("div", { className: "card-face" }, String(s.last.cards[seat])),
              h("div", { className: "pts" }, s.last.annulled ? "" : C.signed(s.last.points[seat])));
          })) });
      }
      var current = bids.filter(function (b) { return b.round === s.round && !s.finished; });
      if (!s.finished) {
        var n = 0;
        out.push({ title: t("Bids this round"), body: current.length ? seatTable(s.players, current.map(function (b) {
          if (!b.last.annulled) n += 1;
          return bidRow(s, b, b.last.annulled ? "\u00D7" : String(n));
        }), t("Bid"), t("Bids this round")) : h("p", { className: "muted" }, t("Nothing yet.")) });
      }
      if (s.rounds.length) {
        out.push({ title: t("Past rounds"), body: h("div", null,
          seatTable(s.players, s.rounds.map(function (r, i) {
            return { label: String(i + 1), cells: r.scores.map(function (v, seat) {
              return seat === r.token ? h("strong", { className: "token-win" }, C.number(v) + " \u25CF") : C.number(v);
            }) };
          }), t("Round"), t("Past rounds")),
          s.rounds.map(function (r, i) {
            var mine = bids.filter(function (b) { return b.round === i + 1; });
            if (!mine.length) return null;
            var k = 0;
            return h("details", null, h("summary", null, t("Bids of round {n}", { n: i + 1 })),
              seatTable(s.players, mine.map(function (b) {
                if (!b.last.annulled) k += 1;
                return bidRow(s, b, b.last.annulled ? "\u00D7" : String(k));
              }), t("Bid"), t("Bids of round {n}", { n: i + 1 })));
          })) });
      }
      return out;
    },
    series: function (steps) {
      var out = resetSeries(steps, "rounds", function (r) { return r.scores; }, "R");
      out.band = [-20, 20];
      return out;
    },
    // A round that ended: its final scores (the board's go back to 0), its
    // token and why it ended, as the box's round screen says.
    result: function (before, s) {
      if (!grew(before, s, "rounds")) return null;
      var r = last(s.rounds);
      return {
        title: over(t("Round {n} over", { n: s.rounds.length }), t("{name} takes a token", { name: name(s, r.token) })),
        lines: [thirdManReason(s.players, r.scores)],
        seats: everySeat(s, function (seat) { return C.number(r.scores[seat]) + (seat === r.token ? " \u25CF" : ""); },
                         function (seat) { return seat === r.token; })
      };
    },
    // One bid's steps: the lead shows its card (public), each other seat
    // enters one (hidden until the reveal, then its value).
    describe: function (st) {
      var a = st.action, s = st.state;
      if (a.type !== "bid") return null;
      if (a.card === null || a.card === undefined) return t("{name} entered a card", { name: name(s, a.seat) });
      var shown = st.before ? st.before.pending && st.before.pending.lead_card === null && st.before.lead === a.seat
        : s.pending && s.pending.lead_card === a.card && s.lead === a.seat;
      return t(shown ? "{name} shows {card}" : "{name} plays {card}", { name: name(s, a.seat), card: a.card });
    }
  };

  // -- Costly Tricks ---------------------------------------------------------------
  // players/scores/tokens/tricks are per side (2); lead and trick winners are seats 0..3.
  function trickSeat(s, seat) {
    return seat < 2 ? s.players[seat] : t("{name}'s dummy", { name: s.players[seat - 2] });
  }

  function cardText(card) { return card[0] + " " + card[1]; }
  var TRICK_COST = 20;           // companion/games/costly_tricks.py

  function reasoning(trick) {
    var lines = trick.steps.map(function (step) {
      var card = cardText(step.card), suit = step.card[0];
      if (step.role === "lead") return t("{card} led", { card: card });
      if (step.role === "follow") return t("{card} follows", { card: card });
      if (step.role === "discard") return t("{card} is a discard ({suit} was displaced)", { card: card, suit: suit });
      if (step.displaces) return t("{card} makes {suit} trump, displacing {old}", { card: card, suit: suit, old: step.displaces });
      if (step.new_trump) return t("{card} makes {suit} trump", { card: card, suit: suit });
      return t("{card} is a trump", { card: card });
    });
    lines.push(t("{card} wins", { card: cardText(trick.cards[trick.winner]) }));
    return lines;
  }

  function trickOf(st) {
    // (winner seat, points) of a trick step: quick entry says it, full entry is judged.
    if (st.action.winner !== undefined && st.action.winner !== null) return [st.action.winner, st.action.points];
    var last = st.state.last_trick;
    return last ? [last.seats[last.winner], last.points] : null;
  }

  G["costly-tricks"] = {
    columns: function (s) {
      return [
        { head: t("Tricks"), cell: function (p) { return String(s.tricks[p]); } },
        { head: t("Hands won"), cell: function (p) { return tokenDots(s.tokens[p]); } }
      ];
    },
    markers: function (s, p) { return s.lead !== null && s.lead % 2 === p ? [t("leads")] : []; },
    status: function (s) {
      if (s.finished) return [];
      if (s.lead === null) return [t("Between hands: waiting for the deal")];
      return [t("{seat} leads the next trick", { seat: trickSeat(s, s.lead) })];
    },
    sections: function (s, steps) {
      var out = [];
      var lt = s.last_trick;
      if (lt) {
        out.push({ title: t("Last trick"), body: h("div", null,
          h("p", { className: "big" }, t("{seat} wins the trick: {points} points",
            { seat: trickSeat(s, lt.seats[lt.winner]), points: lt.points })),
          list(lt.cards.map(function (card, i) {
            return h("span", null, h("strong", null, C.label(trickSeat(s, lt.seats[i]))), " ", cardText(card));
          })),
          h("p", { className: "muted" }, reasoning(lt).join("; "))) });
      }
      // The tricks of the hand under way: those after the latest deal.
      var since = [];
      steps.forEach(function (st) {
        if (st.action.type === "deal") since = [];
        else if (st.action.type === "trick") since.push(st);
      });
      if (s.lead !== null) {
        out.push({ title: t("Tricks this hand"), body: since.length ? list(since.map(function (st, i) {
          var w = trickOf(st);
          return (i + 1) + ". " + (w ? t("Trick to {seat}: {points} points", { seat: trickSeat(s, w[0]), points: w[1] }) : "");
        })) : h("p", { className: "muted" }, t("Nothing yet.")) });
      }
      if (s.hands.length) {
        out.push({ title: t("Past hands"), body: seatTable(s.players, s.hands.map(function (hand, i) {
          return { label: String(i + 1), cells: hand.points.map(function (v, p) {
            var text = C.signed(v) + " (" + hand.tricks[p] + ")";
            return p === hand.token ? h("strong", { className: "token-win" }, text + " \u25CF") : text;
          }) };
        }), t("Hand"), t("Past hands")) });
      }
      return out;
    },
    series: function (steps) {
      return resetSeries(steps, "hands", function (hand) { return hand.points; }, "H");
    },
    // A hand that ended (its points and tricks, its token), or a trick
    // entered quickly (who won it, for how much: a trick entered card by
    // card has its own "Last trick" with the judge's reasoning).
    result: function (before, s, action) {
      if (grew(before, s, "hands")) {
        var hand = last(s.hands);
        return {
          title: over(t("Hand {n} over", { n: s.hands.length }), hand.token === null || hand.token === undefined
            ? t("No token: 0 to 0") : t("{name} takes a token", { name: name(s, hand.token) })),
          lines: [],
          seats: everySeat(s, function (p) {
            return t("{points} points, {tricks} tricks", { points: C.signed(hand.points[p]), tricks: hand.tricks[p] });
          }, function (p) { return p === hand.token; })
        };
      }
      var played = function (st) { return (st.tricks || []).reduce(function (a, b) { return a + b; }, 0); };
      if (s.lead === null || before.lead === null || s.last_trick || played(s) !== played(before) + 1) return null;
      // The trick's card points: the entry's own, else what its side took
      // (a side's score is its card points less 20 a trick: docs/rules.md).
      var side = s.tricks[0] > before.tricks[0] ? 0 : 1;
      var points = action && typeof action.points === "number" ? action.points
        : s.scores[side] - before.scores[side] + TRICK_COST;
      return { title: t("Trick to {seat}: {points} points", { seat: trickSeat(s, s.lead), points: points }),
               lines: [], seats: null };
    },
    describe: function (st) {
      var s = st.state;
      if (st.action.type === "deal") return t("Deal: {seat} leads", { seat: trickSeat(s, st.action.lead) });
      if (st.action.type === "trick") {
        var w = trickOf(st);
        if (w) return t("Trick to {seat}: {points} points", { seat: trickSeat(s, w[0]), points: w[1] });
        return t("Trick: {cards}", { cards: (st.action.cards || []).map(cardText).join(", ") });
      }
      return null;
    }
  };

  // -- FIGHT? ---------------------------------------------------------------------------
  function coinsText(coins) {
    var parts = Object.keys(coins).map(Number).sort(function (a, b) { return b - a; })
      .filter(function (v) { return coins[v] > 0; })
      .map(function (v) { return v + "\u00D7" + coins[v]; });
    return parts.length ? parts.join(" \u00B7 ") : "\u2013";
  }

  G.fight = {
    columns: function () { return []; },
    sub: function (s, seat) { return C.label(t("Coins")) + " " + coinsText(s.coins[seat]); },
    markers: function (s, seat) {
      if (s.out.indexOf(seat) >= 0) return [t("out")];
      return seat === s.turn ? [t("to play")] : [];
    },
    rowClass: function (s, seat) { return s.out.indexOf(seat) >= 0 ? "is-out" : ""; },
    status: function (s) {
      var lines = [];
      if (!s.finished && s.turn !== null) lines.push(t("{name} to play", { name: name(s, s.turn) }));
      lines.push(C.label(t("On the table")) + " " + coinsText(s.table));
      return lines;
    },
    // A player who has just gone out.
    result: function (before, s) {
      if (!grew(before, s, "out")) return null;
      return { title: t("{name} is out: no coins left", { name: name(s, last(s.out)) }), lines: [], seats: null };
    },
    sections: function (s) {
      if (!s.out.length) return [];
      return [{ title: t("Out, in order"), body: h("ol", null, s.out.map(function (seat) { return h("li", null, name(s, seat)); })) }];
    },
    describe: function (st) {
      var a = st.action, s = st.state;
      if (a.type !== "turn") return null;
      var take = a.take || [];
      return take.length ? t("{name} plays {coin}, takes {take}", { name: name(s, a.seat), coin: a.play, take: take.join(" + ") })
                         : t("{name} plays {coin}", { name: name(s, a.seat), coin: a.play });
    }
  };

  // -- Sloppy Seconds ------------------------------------------------------------------------
  var SUITS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
  function suitText(letter) { return (SUITS[letter] || "") + " " + letter; }
  function playingCard(text) {
    var suit = text.slice(-1);
    return text.slice(0, -1) + (SUITS[suit] || suit);
  }
  // Cards in a line, hearts and diamonds in red.
  function cardLine(cards) {
    return h("span", { className: "cards" }, cards.map(function (c) {
      var suit = c.slice(-1);
      return h("span", { className: "pc" + (suit === "H" || suit === "D" ? " red" : "") }, playingCard(c));
    }));
  }

  G["sloppy-seconds"] = {
    columns: function () { return []; },
    // A hand that was scored: each seat's points for it and its total now.
    result: function (before, s) {
      if (!grew(before, s, "hands")) return null;
      var hand = last(s.hands);
      return {
        title: t("Hand {h} scored", { h: s.hands.length }), lines: [],
        seats: everySeat(s, function (seat) {
          return t("{change}, now {total}", { change: C.signed(hand.points[seat]), total: C.number(s.scores[seat]) });
        })
      };
    },
    markers: function (s, seat) {
      var out = [];
      if (seat === s.dealer && !s.finished) out.push(t("deals"));
      if (seat === s.lead && s.tricks_played > 0 && !s.finished) out.push(t("leads"));
      return out;
    },
    status: function (s) {
      if (s.finished) return [];
      var lines = [t("Dealer: {name}", { name: name(s, s.dealer) })];
      lines.push(s.trump ? t("Trump: {suit}", { suit: suitText(s.trump) }) : t("No trump yet"));
      if (s.ineligible) lines.push(t("Not trump: {suit}", { suit: suitText(s.ineligible) }));
      if (s.tricks_played) lines.push(t("Tricks played: {n}", { n: s.tricks_played }));
      return lines;
    },
    sections: function (s) {
      var out = [];
      if (s.last_trick) {
        out.push({ title: t("Last trick"), body: h("div", null, h("p", { className: "big" }, cardLine(s.last_trick.cards)),
          h("p", null, t("{name} wins", { name: name(s, s.last_trick.winner) }))) });
      }
      if (s.tricks_played) {
        out.push({ title: t("Taken this hand"), body: seatTable(s.players, Object.keys(SUITS).map(function (suit) {
          return { label: SUITS[suit] + " " + suit, cells: s.taken.map(function (taken) { return String(taken[suit]); }) };
        }), null, t("Taken this hand")) });
      }
      if (s.hands.length) {
        out.push({ title: t("Past hands"), body: seatTable(s.players, s.hands.map(function (hand, i) {
          return { label: String(i + 1), cells: hand.points.map(function (v) { return C.signed(v); }) };
        }), t("Hand"), t("Past hands")) });
      }
      return out;
    },
    describe: function (st) {
      var a = st.action, s = st.state;
      if (a.type === "hand") return C.label(t("Hand entered")) + " " + a.points.map(function (p, seat) {
        return name(s, seat) + " " + Object.keys(p).map(function (k) { return (SUITS[k] || k) + p[k]; }).join(" ");
      }).join(" · ");
      if (a.type === "trick") {
        var winner = st.state.last_trick ? st.state.last_trick.winner : null;
        return winner === null ? a.cards.map(playingCard).join(" ")
          : t("Trick: {cards} → {name}", { cards: a.cards.map(playingCard).join(" "), name: name(s, winner) });
      }
      return null;
    }
  };

  // -- Yenta ----------------------------------------------------------------------------------
  G.yenta = {
    // A hand that ended: whether the bidder made the bid, each seat's change and total.
    result: function (before, s) {
      if (!grew(before, s, "hands")) return null;
      var hand = last(s.hands);
      var made = hand.points[hand.bidder] >= hand.bid;
      return {
        title: over(t("Hand {n} over", { n: s.hands.length }),
                    t(made ? "{name} made {bid}" : "{name} lost {bid}", { name: name(s, hand.bidder), bid: hand.bid })),
        lines: [],
        seats: everySeat(s, function (seat) {
          return t("{change}, now {total}", { change: C.signed(hand.delta[seat]), total: C.number(s.scores[seat]) });
        }, function (seat) { return seat === hand.bidder; })
      };
    },
    columns: function (s) {
      return [
        { head: t("Hand points"), cell: function (seat) { return C.number(s.hand_points[seat]); } },
        { head: t("Dice"), cell: function (seat) { return String(s.dice[seat]); } }
      ];
    },
    markers: function (s, seat) {
      var out = [];
      if (seat === s.bidder) out.push(t("bidder"));
      if (seat === s.turn) out.push(t("to play"));
      return out;
    },
    status: function (s) {
      if (s.finished) return [];
      return [s.bid === null ? t("No bid yet") : t("Bid: {name}, {amount}", { name: name(s, s.bidder), amount: s.bid })];
    },
    sections: function (s) {
      if (!s.hands.length) return [];
      var short = C.shortNames(s.players, 3);      // the bidder under the hand's number: a narrow column
      return [{ title: t("Past hands"), body: seatTable(s.players, s.hands.map(function (hand, i) {
        return { label: h("span", { title: name(s, hand.bidder) + " " + hand.bid }, String(i + 1), h("br"),
                           h("small", null, short[hand.bidder] + " " + hand.bid)),
          cells: hand.points.map(function (v, seat) {
            return h("span", null, C.number(v), h("br"), h("small", null, C.signed(hand.delta[seat])));
          }) };
      }), t("Hand"), t("Past hands")) }];
    },
    describe: function (st) {
      var a = st.action, s = st.state;
      if (a.type === "bid") return t("{name} bids {amount}", { name: name(s, a.seat), amount: a.amount });
      if (a.type === "ask") return t(a.hit ? "{name} asks {target} for {value}: hit" : "{name} asks {target} for {value}: miss",
        { name: name(s, a.seat), target: name(s, a.target), value: a.value });
      if (a.type === "pass") return t("{name} passes", { name: name(s, a.seat) });
      if (a.type === "last") return t("{name}'s last dice: {dice}", { name: name(s, a.seat), dice: a.dice.join(", ") });
      return null;
    }
  };

  // -- Diabolo ------------------------------------------------------------------------------------
  G.diabolo = {
    // A colour that was scored (who scored what, a double played marked
    // ×2), and the round's end when it was the last colour of the round.
    result: function (before, s, action) {
      var sameRound = s.round === before.round && !s.finished;
      // A score: the round's scored colours grew, or the round (or the game) ended with its last colour.
      var isScore = action ? action.type === "score"
        : sameRound ? grew(before, s, "scored") : s.round !== before.round || (s.finished && !before.finished);
      if (!isScore) return null;
      var color = action ? action.color : sameRound ? last(s.scored) : null;
      if (!color) {
        var left = (before.colors || []).filter(function (c) { return (before.scored || []).indexOf(c) < 0; });
        color = left.length === 1 ? left[0] : null;
      }
      // A double played this round is spent (known while the round goes on).
      var doubled = s.players.map(function (_, seat) {
        return sameRound && !!before.doubles_left[seat] && !s.doubles_left[seat];
      });
      var who = s.players.map(function (_, seat) { return seat; }).filter(function (seat) {
        return s.scores[seat] !== before.scores[seat] || doubled[seat];
      });
      var lines = who.length ? [] : [t("Nobody scores")];
      if (!sameRound && color) lines.push(t("Round {n} over", { n: before.round }));
      return {
        title: color ? capital(t("{color} scored", { color: C.colour(color) })) : t("Round {n} over", { n: before.round }),
        lines: lines,
        seats: who.map(function (seat) {
          return { seat: seat, text: (doubled[seat] ? "\u00D72 " : "") + C.signed(s.scores[seat] - before.scores[seat]), strong: false };
        })
      };
    },
    columns: function (s) {
      return [
        { head: t("Double"), cell: function (seat) { return s.doubles_left[seat] ? t("in hand") : h("span", { className: "muted" }, t("spent")); } }
      ];
    },
    markers: function (s, seat) {
      var out = seat === s.dealer && !s.finished ? [t("deals")] : [];
      if (s.decided && s.decided.seats.indexOf(seat) >= 0) out.push(entered());
      return out;
    },
    status: function (s) {
      if (s.finished) return [];
      var lines = [t("Round {r}", { r: s.round }) + " \u00B7 " + t("Dealer: {name}", { name: name(s, s.dealer) })];
      lines.push(s.scored.length ? t("Scored this round: {colors}", { colors: s.scored.map(C.colour).join(", ") }) : t("Nothing scored yet this round"));
      if (s.decided) lines.push(t("Deciding doubles for {color}: {names}", { color: C.colour(s.decided.color), names: C.names(s, s.decided.seats) }));
      return lines;
    },
    sections: function (s, steps) {
      // Each scored colour with who scored what, round by round.
      var rounds = {};
      steps.forEach(function (st) {
        if (st.action.type !== "score" || !st.before) return;
        var r = st.before.round;
        (rounds[r] = rounds[r] || []).push({ label: C.colour(st.action.color), cells: st.state.scores.map(function (v, seat) {
          var d = v - st.before.scores[seat];
          return d ? C.signed(d) : "\u00B7";
        }) });
      });
      return Object.keys(rounds).map(Number).sort(function (a, b) { return b - a; }).map(function (r) {
        return { title: t("Round {r}", { r: r }), body: seatTable(s.players, rounds[r], t("Colours"), t("Round {r}", { r: r })) };
      });
    },
    describe: function (st) {
      var a = st.action, s = st.state, color = typeof a.color === "string" ? C.colour(a.color) : a.color;
      if (a.type === "place") return t("{name}: {value} on {color} ({side})", { name: name(s, a.seat), value: a.value, color: color, side: t(a.side) });
      if (a.type === "double") {
        if (a.play === null || a.play === undefined) return t("{name} entered a double decision for {color}", { name: name(s, a.seat), color: color });
        return t(a.play ? "{name} plays the double on {color}" : "{name} keeps the double ({color})", { name: name(s, a.seat), color: color });
      }
      if (a.type === "score") {
        if (typeof a.heaven === "number") return t("{color} scored: heaven {heaven}, hell {hell}", { color: color, heaven: a.heaven, hell: a.hell });
        return t("{color} scored", { color: color });
      }
      return null;
    }
  };

  // -- Free scoreboard ----------------------------------------------------------------------------
  G.scoreboard = {
    // A secret round revealed: every seat's number.
    result: function (before, s) {
      if (!s.reveal || same(s.reveal, before.reveal)) return null;
      return { title: t("Revealed!"), lines: [], seats: everySeat(s, function (seat) { return C.number(s.reveal[seat]); }) };
    },
    columns: function (s) {
      var cols = [];
      if (s.tokens.some(function (n) { return n > 0; })) {
        cols.push({ head: t("Tokens"), cell: function (seat) { return tokenDots(s.tokens[seat]); } });
      }
      return cols;
    },
    markers: function (s, seat) { return s.entered.indexOf(seat) >= 0 ? [entered()] : []; },
    status: function (s) {
      return s.entered.length ? [t("Secret round: {names} entered", { names: C.names(s, s.entered) })] : [];
    },
    sections: function (s, steps) {
      var out = [];
      // The newest reveal is on the board itself until the next entry (result()): here after it.
      var entries = steps.filter(function (st) { return st.action.type !== "clock"; });
      var latest = entries.length > 1 ? entries[entries.length - 1] : null;
      var onBoard = latest && latest.before && latest.state.reveal && !same(latest.state.reveal, latest.before.reveal);
      if (s.reveal && !onBoard) {
        out.push({ title: t("Last reveal"), className: "reveal", body: h("div", { className: "reveal-cards" }, s.players.map(function (p, seat) {
          return h("div", { className: "reveal-card" }, h("div", { className: "who" }, C.dot(seat), " ", p),
            h("div", { className: "card-face" }, C.number(s.reveal[seat])));
        })) });
      }
      var reveals = [];
      steps.forEach(function (st) {
        if (st.before && st.state.reveal && !same(st.state.reveal, st.before.reveal)) reveals.push(st.state.reveal);
      });
      if (reveals.length > 1) {
        out.push({ title: t("Reveals"), body: seatTable(s.players, reveals.map(function (r, i) {
          return { label: String(i + 1), cells: r.map(C.number) };
        }), null, t("Reveals")) });
      }
      return out;
    },
    describe: function (st) {
      var a = st.action, s = st.state;
      if (a.type === "add") return t("{name} {points}", { name: name(s, a.seat), points: C.signed(a.points) });
      if (a.type === "token") return t("{name}: token {delta}", { name: name(s, a.seat), delta: C.signed(a.delta) });
      if (a.type === "secret") {
        if (a.value === null || a.value === undefined) return t("{name} entered a secret", { name: name(s, a.seat) });
        return t("{name}'s secret: {value}", { name: name(s, a.seat), value: C.number(a.value) });
      }
      return null;
    }
  };

  // -- any other game: the generic part, and the rest of its state as it is -------------------------
  var GENERIC = ["game", "players", "scores", "finished", "winner"];
  C.fallbackGame = {
    columns: function () { return []; },
    markers: function () { return []; },
    status: function () { return []; },
    sections: function (s) {
      var rest = Object.keys(s).filter(function (k) { return GENERIC.indexOf(k) < 0; });
      if (!rest.length) return [];
      return [{ title: t("Other details"), body: h("dl", { className: "kv" }, rest.map(function (k) {
        return [h("dt", null, k), h("dd", null, JSON.stringify(s[k]))];
      })) }];
    },
    describe: function (st) {
      var a = st.action;
      var parts = Object.keys(a).filter(function (k) { return k !== "type"; }).map(function (k) { return k + " " + JSON.stringify(a[k]); });
      return parts.length ? C.label(a.type) + " " + parts.join(", ") : a.type;
    }
  };

  C.gameOf = function (s) { return G[s.game] || C.fallbackGame; };
  C.seriesOf = function (s, steps) {
    var game = C.gameOf(s);
    return game.series ? game.series(steps) : scoreSeries(steps);
  };
})();
