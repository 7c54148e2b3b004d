/* /backup: download the box's backup file, restore one (web/backup.py).
   The PIN goes in a header, so the download is a fetch turned into a link. */
(function () {
  "use strict";
  var C = window.Companion, t = C.t, h = C.h;

  function remember(form) {
    var pin = C.pin.get();
    if (pin) form.elements.pin.value = pin;
  }

  function answered(r, pin) {
    if (r.ok) { C.pin.set(pin); } else if (r.status === 403 || r.status === 401) { C.pin.clear(); }
  }

  function errorOf(response) {
    return response.text().then(function (text) {
      try { return JSON.parse(text).error || String(response.status); } catch (e) { return String(response.status); }
    });
  }

  var lang = "?lang=" + encodeURIComponent(C.boot.lang || "en");

  var download = document.getElementById("backup-form");
  var downloadMsg = document.getElementById("backup-msg");
  remember(download);
  download.addEventListener("submit", function (e) {
    e.preventDefault();
    var pin = download.elements.pin.value.trim();
    if (!pin) return C.message(downloadMsg, t("Enter the table PIN first."), "error");
    C.message(downloadMsg, t("Sending…"));
    fetch("/api/backup" + lang, { headers: { "X-Table-Pin": pin }, cache: "no-store" }).then(function (response) {
      answered(response, pin);
      if (!response.ok) return errorOf(response).then(function (error) { C.message(downloadMsg, error, "error"); });
      var name = (/filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "") || [])[1] || "companion.zip";
      return response.blob().then(function (blob) {
        var link = h("a", { href: URL.createObjectURL(blob), download: name });
        document.body.appendChild(link);
        link.click();
        link.remove();
        C.message(downloadMsg, t("Downloaded."), "ok");
      });
    }, function () { C.message(downloadMsg, t("The box does not answer: try again."), "error"); });
  });

  var restore = document.getElementById("restore-form");
  var restoreMsg = document.getElementById("restore-msg");
  remember(restore);
  restore.addEventListener("submit", function (e) {
    e.preventDefault();
    var file = restore.elements.file.files[0];
    var pin = restore.elements.pin.value.trim();
    if (!file) return C.message(restoreMsg, t("Choose a backup file first."), "error");
    if (!pin) return C.message(restoreMsg, t("Enter the table PIN first."), "error");
    C.message(restoreMsg, t("Sending…"));
    fetch("/api/backup/restore" + lang, {
      method: "POST", body: file, cache: "no-store",
      headers: { "X-Table-Pin": pin, "Content-Type": "application/zip" }
    }).then(function (response) {
      answered(response, pin);
      if (!response.ok) return errorOf(response).then(function (error) { C.message(restoreMsg, error, "error"); });
      return response.json().then(function (body) {
        C.message(restoreMsg, t("Restored {games} games: the box restarts now.", { games: body.restored.games }), "ok");
      });
    }, function () { C.message(restoreMsg, t("The box does not answer: try again."), "error"); });
  });
})();
