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
    document.getElementById("owner-reset").addEventListener("click", function () {
      ask("/api/owner/reset", {}, "The box is back in set-up: reload this page.");
    });
  }
  follow();
  setInterval(follow, 2000);
})();
