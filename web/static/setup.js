/* The Setup page (web/setup.py, web/owner.py).  In set-up: send the form
   with the PIN and the owner password chosen (Finish), show the box's
   one-line answer, then follow /api/setup and reload when the join moves on.
   Set up: the owner's section (SSH key, "Set up again"), sent with the
   owner password, never the PIN.  Every text is the server's, in the
   page's language. */
(function () {
  "use strict";
  var C = window.Companion;
  var form = document.getElementById("setup-form");
  var ownerForm = document.getElementById("owner-form");
  var last = null;

  function sayIn(el, text) {
    el.textContent = text;
    el.hidden = !text;
  }

  function follow() {
    fetch("/api/setup", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (view) {
      var now = JSON.stringify(view.join);
      if (last !== null && now !== last) location.reload();
      last = now;
    }).catch(function () { /* the box's own Wi-Fi is down while it tries: wait */ });
  }

  // -- "Saved": what the box stored, said once the page has reloaded ------------------
  var SAVED = "companion.setup.saved";
  function remember(saved) {
    try { window.sessionStorage.setItem(SAVED, JSON.stringify(saved)); } catch (e) { /* said before the reload only */ }
  }
  function showSaved() {
    var box = document.getElementById("setup-saved");
    var saved = null;
    try { saved = JSON.parse(window.sessionStorage.getItem(SAVED) || "null"); } catch (e) { saved = null; }
    if (!box || !saved || Date.now() - saved.at > 10 * 60 * 1000) return;
    var h = C.h, rows = [];
    if (saved.name !== undefined) rows.push(C.t("The table's name: {name}", { name: saved.name }));
    if (saved.language) rows.push(C.t("Language: {language}", { language: saved.language }));
    if (saved.timezone) rows.push(C.t("Time zone: {zone}", { zone: saved.timezone }));
    if (saved.owner) rows.push(C.t("Owner password: chosen (keep it: updates and restoring a backup ask for it)"));
    if (saved.ssh) rows.push(C.t("SSH key: added"));
    C.replace(box, h("h2", { id: "saved-title" }, C.t("Saved")),
      h("ul", { className: "plain", id: "saved-values" }, rows.map(function (row) { return h("li", null, row); })),
      saved.finished ? h("a", { className: "button primary wide", href: "/" }, C.t("Open the scoreboard")) : null);
    box.hidden = false;
  }
  showSaved();

  function post(url, headers, body) {
    return fetch(url, {
      method: "POST", cache: "no-store",
      headers: Object.assign({ "Content-Type": "application/json" }, headers),
      body: JSON.stringify(body || {})
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, data: data }; });
    });
  }

  if (form) {
    var error = document.getElementById("setup-error");
    var say = function (text) { sayIn(error, text); };
    var pin = document.getElementById("setup-pin");
    pin.value = C.pin.get();
    pin.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { event.preventDefault(); form.requestSubmit(); }
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var owner = form.elements.owner_password.value;
      if (owner !== form.elements.owner_password_again.value) { say(C.t("The two owner passwords differ.")); return; }
      var body = { done: true };
      ["name", "language", "timezone", "password", "ssh_key", "owner_password"].forEach(function (key) {
        var field = form.elements[key];
        if (field && field.value !== "") body[key] = field.value;
      });
      var picked = form.querySelector("input[name=ssid]:checked");
      if (picked) body.ssid = picked.value;
      say(C.t("Sending…"));
      post("/api/setup", { "X-Table-Pin": pin.value.trim() }, body).then(function (res) {
        if (!res.ok) { say(res.data.error || C.t("The box does not answer: try again.")); return; }
        C.pin.set(pin.value.trim());
        // The stored values as the box answers them, in this page's words.
        var keys = res.data.saved || [];
        var language = form.elements.language;
        var zone = form.elements.timezone;
        var zoneLabel = zone && zone.selectedOptions && zone.selectedOptions[0] ? zone.selectedOptions[0].textContent : "";
        remember({
          at: Date.now(), finished: !res.data.setup_mode,
          name: keys.indexOf("name") >= 0 ? res.data.name : undefined,
          language: keys.indexOf("language") >= 0 && language && language.selectedOptions[0] ? language.selectedOptions[0].textContent : null,
          timezone: keys.indexOf("timezone") >= 0 && res.data.timezone
            ? (zoneLabel && zoneLabel !== res.data.timezone ? zoneLabel + " (" + res.data.timezone + ")" : res.data.timezone) : null,
          owner: keys.indexOf("owner") >= 0, ssh: keys.indexOf("ssh_key") >= 0
        });
        location.reload();
      }).catch(function () { say(C.t("The box does not answer: try again.")); });
    });
  }

  if (ownerForm) {
    var msg = document.getElementById("owner-msg");
    var password = document.getElementById("owner-password");
    var ask = function (url, body, after) {
      if (!password.value) { sayIn(msg, C.t("Enter the owner password first.")); password.focus(); return; }
      sayIn(msg, C.t("Sending…"));
      post(url, { "X-Owner-Password": C.ownerHeader(password.value) }, body).then(function (res) {
        if (!res.ok) { sayIn(msg, res.data.error || C.t("The box does not answer: try again.")); return; }
        sayIn(msg, C.t(after));
      }).catch(function () { sayIn(msg, C.t("The box does not answer: try again.")); });
    };
    ownerForm.addEventListener("submit", function (event) { event.preventDefault(); });
    document.getElementById("owner-ssh-add").addEventListener("click", function () {
      ask("/api/owner/ssh-key", { ssh_key: document.getElementById("owner-ssh").value },
          "Asked: the box applies it in a moment.");
    });
    document.getElementById("owner-ssh-remove").addEventListener("click", function () {
      ask("/api/owner/ssh-key/remove", {}, "Asked: the box applies it in a moment.");
    });
    // Setting up again forgets the owner: asked once, saying so, before anything is sent.
    var resetAsk = document.getElementById("owner-reset");
    var resetBox = document.getElementById("reset-confirm");
    var resetting = function (on) {
      resetBox.hidden = !on;
      resetAsk.hidden = on;
      (on ? document.getElementById("reset-no") : resetAsk).focus();
    };
    resetAsk.addEventListener("click", function () {
      if (!password.value) { sayIn(msg, C.t("Enter the owner password first.")); password.focus(); return; }
      sayIn(msg, "");
      resetting(true);
    });
    document.getElementById("reset-no").addEventListener("click", function () { resetting(false); });
    document.getElementById("reset-yes").addEventListener("click", function () {
      resetting(false);
      ask("/api/owner/reset", {}, "The box is back in set-up: reload this page.");
    });
  }
  follow();
  setInterval(follow, 2000);
})();
