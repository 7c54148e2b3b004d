/* /update (web/update.py): the owner sends a bundle, goes back to the
   previous version, or changes the release keys, each with the owner
   password (header X-Owner-Password); the page follows the root
   installer's progress (GET /api/update) until its result.  The owner
   password stays in its field: unlike the PIN, this page never keeps it.
   Every text comes from the box already in the page's language. */
(function () {
  "use strict";
  var C = window.Companion, t = C.t, h = C.h;
  var BUSY = ["asked", "verifying", "installing", "checking"];
  var lang = "?lang=" + encodeURIComponent(C.boot.lang || "en");
  var statusLine = document.getElementById("update-status");
  if (!statusLine) return;              // no installer here: the page only says so
  var owner = document.getElementById("owner-password");
  var shownVersion = document.getElementById("update-version").dataset.version;

  document.getElementById("owner-form").addEventListener("submit", function (e) { e.preventDefault(); });

  // The owner password, or null after saying why not.
  function ownerPassword(msg) {
    var password = owner.value;
    if (password) return password;
    C.message(msg, t("Enter the owner password first."), "error");
    owner.focus();
    return null;
  }

  function show(status) {
    statusLine.textContent = status.text;
    statusLine.dataset.state = status.state;
  }

  var following = false;
  function follow() {
    if (following) return;
    following = true;
    (function poll() {
      C.api("GET", "/api/update").then(function (answer) {
        if (!answer.ok) { setTimeout(poll, 4000); return; }      // the box restarts during an update
        var status = answer.body;
        show(status);
        if (BUSY.indexOf(status.state) >= 0) { setTimeout(poll, 2000); return; }
        following = false;
        // Another version runs now: the page's own lines (version, the one
        // before, going back) are the server's, so it draws them again.
        if (status.version && status.version !== shownVersion) window.location.reload();
      });
    })();
  }

  // -- a bundle ------------------------------------------------------------------
  var form = document.getElementById("update-form");
  var errorLine = document.getElementById("update-error");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = document.getElementById("update-file").files[0];
    if (!file) return C.message(errorLine, t("Choose an update bundle first."), "error");
    var password = ownerPassword(errorLine);
    if (password === null) return;
    C.message(errorLine, "");
    fetch("/api/update" + lang, {
      method: "POST", body: file, cache: "no-store",
      headers: { "X-Owner-Password": C.ownerHeader(password), "Content-Type": "application/octet-stream" }
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, data: data }; },
                           function () { return { ok: false, data: null }; });
    }).then(function (answer) {
      if (!answer.ok) return C.message(errorLine, (answer.data && answer.data.error) || "?", "error");
      show(answer.data);
      follow();
    }, function () {
      C.message(errorLine, t("The box does not answer: try again."), "error");
    });
  });

  // -- back to the previous version: asked once, on the page -----------------------------
  var ask = document.getElementById("back-ask");
  if (ask) {
    var confirmBox = document.getElementById("back-confirm");
    var backMsg = document.getElementById("back-msg");
    var asking = function (on) {
      confirmBox.hidden = !on;
      ask.hidden = on;
      (on ? document.getElementById("back-yes") : ask).focus();
    };
    ask.addEventListener("click", function () {
      if (ownerPassword(backMsg) === null) return;
      C.message(backMsg, "");
      asking(true);
    });
    document.getElementById("back-no").addEventListener("click", function () { asking(false); });
    document.getElementById("back-yes").addEventListener("click", function () {
      var password = ownerPassword(backMsg);
      if (password === null) return asking(false);
      confirmBox.hidden = true;
      C.message(backMsg, t("Sending…"));
      C.api("POST", "/api/update/back", undefined, { "X-Owner-Password": C.ownerHeader(password) }).then(function (answer) {
        ask.hidden = false;
        if (!answer.ok) return C.message(backMsg, answer.error, "error");
        // Said here too: the status line below follows root's progress.
        C.message(backMsg, answer.body.text, "ok");
        show(answer.body);
        follow();
      });
    });
  }

  // -- the release keys ----------------------------------------------------------------------
  var list = document.getElementById("keys");
  var keysMsg = document.getElementById("keys-msg");
  var noKeys = document.getElementById("no-keys");

  function drawKeys(view) {
    var keys = view.keys || [];
    C.replace(list, keys.length ? keys.map(function (key) {
      return h("li", null,
        h("span", { className: "key" }, h("span", { className: "fp" }, key.fingerprint),
          h("span", { className: "comment" }, key.comment || t("no comment"))),
        h("button", { type: "button", className: "danger", "data-remove": key.fingerprint }, t("Remove")));
    }) : h("li", null, h("span", { className: "key" }, t("No release key: this box accepts no update."))));
    noKeys.hidden = !!view.accepts_updates;
  }

  // Root changes the key list: ask again until its result for this request
  // (root's reason, when it refused, comes translated as result.text).
  function awaitResult(request, tries) {
    C.api("GET", "/api/update/keys").then(function (answer) {
      var result = answer.ok && answer.body.result;
      if (!result || result.request !== request) {
        if (tries > 0) setTimeout(function () { awaitResult(request, tries - 1); }, 2000);
        return;
      }
      drawKeys(answer.body);
      if (result.state === "failed") {
        C.message(keysMsg, result.text || t("The release keys were not changed."), "error");
      } else {
        C.message(keysMsg, t("The release keys were changed."), "ok");
      }
    });
  }

  function change(body) {
    var password = ownerPassword(keysMsg);
    if (password === null) return;
    C.message(keysMsg, t("Sending…"));
    C.api("POST", "/api/update/keys", body, { "X-Owner-Password": C.ownerHeader(password) }).then(function (answer) {
      if (!answer.ok) return C.message(keysMsg, answer.error, "error");
      if (body.add) document.getElementById("key-line").value = "";
      C.message(keysMsg, t("Asked: the box changes its release keys…"));
      awaitResult(answer.body.request, 30);
    });
  }

  list.addEventListener("click", function (e) {
    var button = e.target.closest("button[data-remove]");
    if (button) change({ remove: button.getAttribute("data-remove") });
  });
  document.getElementById("key-form").addEventListener("submit", function (e) {
    e.preventDefault();
    // One line, however the phone wrapped or pasted it.
    var line = document.getElementById("key-line").value.replace(/\s+/g, " ").trim();
    if (!line) return C.message(keysMsg, t("Paste a key line first."), "error");
    change({ add: line });
  });

  if (BUSY.indexOf(statusLine.dataset.state) >= 0) follow();
})();
