/* The Setup page's board section (web/templates/_setup_board.html, web/board.py).
   Try another board: in set-up with the table PIN (the form's), after it
   with the owner password; then follow /api/board while the box restarts
   on it, and say whether a press of OK on the box kept it.  Every text is
   the page's, in its language (the section's data-* attributes). */
(function () {
  "use strict";
  var C = window.Companion;
  var section = document.getElementById("board-section");
  if (!section) return;
  var T = section.dataset;
  var msg = document.getElementById("board-msg");
  var choice = document.getElementById("board-choice");
  var owner = document.getElementById("board-owner");
  var watching = null;

  function say(text) { msg.textContent = text; msg.hidden = !text; }

  function follow(wanted) {
    clearInterval(watching);
    var seenTrial = false;
    watching = setInterval(function () {
      fetch("/api/board", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (view) {
        if (view.trial) { seenTrial = true; return; }
        if (!seenTrial && view.board !== wanted) return;   /* not started again yet */
        clearInterval(watching);
        say(view.board === wanted ? T.kept : T.back);
        section.dataset.current = view.board;
      }).catch(function () { /* the box is starting again: wait */ });
    }, 2000);
  }

  document.getElementById("board-try").addEventListener("click", function () {
    var headers = { "Content-Type": "application/json" };
    if (T.setup === "1") {
      var pin = document.getElementById("setup-pin");
      headers["X-Table-Pin"] = (pin && pin.value.trim()) || C.pin.get();
    } else {
      if (!owner.value) { say(T.need); owner.focus(); return; }
      headers["X-Owner-Password"] = C.ownerHeader(owner.value);
    }
    say(T.sending);
    fetch("/api/board", { method: "POST", cache: "no-store", headers: headers,
                          body: JSON.stringify({ board: choice.value }) })
      .then(function (r) { return r.json().then(function (data) { return { ok: r.ok, data: data }; }); })
      .then(function (res) {
        if (!res.ok) { say(res.data.error || T.silent); return; }
        say(T.asked);
        follow(choice.value);
      }).catch(function () { say(T.silent); });
  });
  if (T.trying) { say(T.asked); follow(T.trying); }
})();
