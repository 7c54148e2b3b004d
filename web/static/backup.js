/* /backup: download the box's backup file (the PIN), restore one (the
   owner password) (web/backup.py).  Credentials go in headers, so the
   download is a fetch turned into a link. */
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

  // Restoring replaces every game and player on the box: the owner's, with
  // the owner password (never kept by the page, unlike the PIN), and asked
  // once on the page before anything is replaced.  The question says what
  // the file is (its date, its games: the box looks at it first, POST
  // /api/backup/check, which keeps nothing) and what the box loses.
  var restore = document.getElementById("restore-form");
  var restoreMsg = document.getElementById("restore-msg");
  var ask = document.getElementById("restore-ask");
  var confirmBox = document.getElementById("restore-confirm");
  function asking(on) {
    confirmBox.hidden = !on;
    ask.hidden = on;
    (on ? document.getElementById("restore-yes") : ask).focus();
  }
  function ready() {
    if (!restore.elements.file.files[0]) { C.message(restoreMsg, t("Choose a backup file first."), "error"); return false; }
    var password = restore.elements.owner_password.value;
    if (!password) {
      C.message(restoreMsg, t("Enter the owner password first."), "error");
      restore.elements.owner_password.focus();
      return false;
    }
    return true;
  }
  function when(iso) {
    var date = new Date(iso);
    if (isNaN(date.getTime())) return iso;
    try {
      return date.toLocaleString(C.boot.lang || "en", { dateStyle: "long", timeStyle: "short" });
    } catch (e) { return date.toLocaleString(); }
  }
  function games(n) { return n === 1 ? t("1 game") : t("{n} games", { n: n }); }
  function players(n) { return n === 1 ? t("1 player") : t("{n} players", { n: n }); }

  restore.addEventListener("submit", function (e) {
    e.preventDefault();
    if (!ready()) return;
    C.message(restoreMsg, t("Sending…"));
    fetch("/api/backup/check" + lang, {
      method: "POST", body: restore.elements.file.files[0], cache: "no-store",
      headers: { "X-Owner-Password": C.ownerHeader(restore.elements.owner_password.value), "Content-Type": "application/zip" }
    }).then(function (response) {
      if (!response.ok) return errorOf(response).then(function (error) { C.message(restoreMsg, error, "error"); });
      return response.json().then(function (look) {
        C.message(restoreMsg, "");
        document.getElementById("restore-prompt").textContent = t("Replace everything on this box with the backup of {date} ({games})?",
          { date: when(look.backup.created_at), games: games(look.backup.games) });
        var s = C.boot.state || {};
        var lost = t("What is on this box now is lost: {games} and {players}.",
          { games: games(look.box.games), players: players(look.box.players) });
        if (s.game && !s.finished) {
          var where = C.whereGameStands(s);
          lost += " " + t("The game at the table goes too: {game}.",
            { game: C.title(s.game) + " (" + (s.players || []).join(", ") + (where ? ", " + where : "") + ")" });
        }
        document.getElementById("restore-lost").textContent = lost;
        asking(true);
      });
    }, function () { C.message(restoreMsg, t("The box does not answer: try again."), "error"); });
  });
  document.getElementById("restore-no").addEventListener("click", function () { asking(false); });
  document.getElementById("restore-yes").addEventListener("click", function () {
    if (!ready()) return asking(false);
    var file = restore.elements.file.files[0];
    confirmBox.hidden = true;
    ask.hidden = false;
    C.message(restoreMsg, t("Sending…"));
    fetch("/api/backup/restore" + lang, {
      method: "POST", body: file, cache: "no-store",
      headers: { "X-Owner-Password": C.ownerHeader(restore.elements.owner_password.value), "Content-Type": "application/zip" }
    }).then(function (response) {
      if (!response.ok) return errorOf(response).then(function (error) { C.message(restoreMsg, error, "error"); });
      return response.json().then(function (body) {
        C.message(restoreMsg, t("Restored {games} games: the box restarts now.", { games: body.restored.games }), "ok");
      });
    }, function () { C.message(restoreMsg, t("The box does not answer: try again."), "error"); });
  });
})();
