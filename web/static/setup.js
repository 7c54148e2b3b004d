/* The Setup page (web/setup.py): send the form with the PIN, show the box's
   one-line answer, then follow /api/setup and reload when the join moves on
   (every text on the page is the server's, in the page's language). */
(function () {
  "use strict";
  var C = window.Companion;
  var form = document.getElementById("setup-form");
  var error = document.getElementById("setup-error");
  var last = null;

  function say(text) {
    error.textContent = text;
    error.hidden = !text;
  }

  function follow() {
    fetch("/api/setup", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (view) {
      var now = JSON.stringify(view.join);
      if (last !== null && now !== last) location.reload();
      last = now;
    }).catch(function () { /* the box's own Wi-Fi is down while it tries: wait */ });
  }

  if (form) {
    var pin = document.getElementById("setup-pin");
    pin.value = C.pin.get();
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var body = {};
      ["name", "language", "timezone", "password", "ssh_key"].forEach(function (key) {
        var field = form.elements[key];
        if (field && field.value !== "") body[key] = field.value;
      });
      var picked = form.querySelector("input[name=ssid]:checked");
      if (picked) body.ssid = picked.value;
      say(C.t("Sending…"));
      fetch("/api/setup", {
        method: "POST", cache: "no-store",
        headers: { "Content-Type": "application/json", "X-Table-Pin": pin.value.trim() },
        body: JSON.stringify(body)
      }).then(function (r) {
        return r.json().then(function (data) { return { ok: r.ok, data: data }; });
      }).then(function (res) {
        if (!res.ok) { say(res.data.error || C.t("The box does not answer: try again.")); return; }
        C.pin.set(pin.value.trim());
        location.reload();
      }).catch(function () { say(C.t("The box does not answer: try again.")); });
    });
  }
  follow();
  setInterval(follow, 2000);
})();
