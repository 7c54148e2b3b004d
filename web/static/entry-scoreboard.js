/* The free scoreboard at the table control: every seat's points and tokens
   by a tap and a number (web/static/points.js), sent with the table PIN;
   the answer line offers to undo the entry just made. */
(function () {
  "use strict";
  var C = window.Companion;
  var H = C.entryKit;
  if (!H || !C.pointsPanel) return;

  var panel = null;
  C.entries.scoreboard = function (ctx) {
    if (!panel) {
      panel = C.pointsPanel({ me: null, send: function (action) { return C.control.post(action); } });
    }
    panel.state(ctx.s);
    return { key: "points", node: panel.node };
  };
  C.entries.scoreboard.keepsEnd = true;
})();
