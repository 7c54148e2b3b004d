/* /update: send a bundle (the request body, with the table PIN) and follow
   the root installer's progress (GET /api/update) until its result.  Every
   text comes from the box already in the page's language. */
(function () {
  "use strict";
  var C = window.Companion;
  var form = document.getElementById("update-form");
  var statusLine = document.getElementById("update-status");
  var errorLine = document.getElementById("update-error");
  var pinInput = document.getElementById("update-pin");
  var lang = (JSON.parse(document.getElementById("boot").textContent || "{}").lang) || "en";
  if (C && C.pin && C.pin.get()) pinInput.value = C.pin.get();

  function show(status) {
    statusLine.textContent = status.text;
    statusLine.dataset.state = status.state;
  }

  function follow() {
    fetch("/api/update?lang=" + encodeURIComponent(lang), { cache: "no-store" }).then(function (r) {
      return r.json();
    }).then(function (status) {
      show(status);
      if (["asked", "verifying", "installing", "checking"].indexOf(status.state) >= 0) setTimeout(follow, 2000);
    }, function () { setTimeout(follow, 4000); });   // the box restarts during an update
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = document.getElementById("update-file").files[0];
    if (!file) return;
    errorLine.hidden = true;
    fetch("/api/update?lang=" + encodeURIComponent(lang), {
      method: "POST", body: file, cache: "no-store",
      headers: { "X-Table-Pin": pinInput.value.trim(), "Content-Type": "application/octet-stream" }
    }).then(function (r) {
      return r.json().then(function (data) { return { ok: r.ok, data: data }; });
    }).then(function (answer) {
      if (!answer.ok) {
        errorLine.textContent = (answer.data && answer.data.error) || "?";
        errorLine.hidden = false;
        return;
      }
      if (C && C.pin) C.pin.set(pinInput.value.trim());
      show(answer.data);
      follow();
    }, function () {
      errorLine.textContent = C ? C.t("The box does not answer: try again.") : "?";
      errorLine.hidden = false;
    });
  });
  if (["asked", "verifying", "installing", "checking"].indexOf(statusLine.dataset.state) >= 0) follow();
})();
