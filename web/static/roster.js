/* The table's players on /control (GET/POST /api/players, docs/api.md):
   a name typed here once is on the box's list at every new game.  Each
   player can be renamed (their past games show the new name; the games'
   logs keep theirs) or merged into another (a name typed twice).  Writes
   need the table PIN this phone keeps (common.js, control.js).  The texts come
   translated in #roster-texts (web/templates/control.html). */
(function () {
  "use strict";
  var C = window.Companion;
  var section = document.getElementById("roster-section");
  if (!C || !section) return;
  var h = C.h;
  var texts = JSON.parse(document.getElementById("roster-texts").textContent);
  function t(text, params) {
    var out = texts[text] || text;
    return out.replace(/\{(\w+)\}/g, function (whole, key) {
      return params && Object.prototype.hasOwnProperty.call(params, key) ? String(params[key]) : whole;
    });
  }

  var list = document.getElementById("roster-list");
  var msg = document.getElementById("roster-msg");
  var input = document.getElementById("roster-name");
  var players = [];
  var open = null;              // {id, kind: "rename"|"merge"}: the one player being changed

  function send(path, body, done) {
    if (!C.pin.get()) { C.message(msg, t("Enter the table PIN first."), "error"); return; }
    C.message(msg, t("Sending…"));
    C.api("POST", path, body, { "X-Table-Pin": C.pin.get() }).then(function (r) {
      if (!r.ok) { C.message(msg, r.error, "error"); return; }
      players = r.body.players;
      open = null;
      C.message(msg, done(r.body.player), "ok");
      draw();
      // The new-game form offers the roster: let it read the list again.
      if (C.control && C.control.reloadNames) C.control.reloadNames();
    });
  }

  function editor(p) {
    var id = "roster-edit-" + p.id;
    if (open.kind === "rename") {
      var field = h("input", { id: id, type: "text", maxlength: "24", value: p.name, autocomplete: "off", required: true });
      return h("form", { className: "roster-edit", onsubmit: function (e) {
        e.preventDefault();
        send("/api/players/" + p.id + "/rename", { name: field.value },
             function (q) { return t("Renamed: {name}.", { name: q.name }); });
      } }, h("label", { for: id }, t("New name for {name}", { name: p.name })),
        h("div", { className: "row" }, field,
          h("button", { type: "submit", className: "primary fixed" }, t("Save")),
          h("button", { type: "button", className: "fixed", onclick: close }, t("Cancel"))));
    }
    var others = players.filter(function (q) { return q.id !== p.id; });
    var select = h("select", { id: id }, others.map(function (q) { return h("option", { value: String(q.id) }, q.name); }));
    return h("form", { className: "roster-edit", onsubmit: function (e) {
      e.preventDefault();
      send("/api/players/" + p.id + "/merge", { into: Number(select.value) },
           function (q) { return t("Merged into {name}.", { name: q.name }); });
    } }, h("label", { for: id }, t("Merge {name} into", { name: p.name })),
      h("div", { className: "row" }, select,
        h("button", { type: "submit", className: "danger fixed" }, t("Merge")),
        h("button", { type: "button", className: "fixed", onclick: close }, t("Cancel"))));
  }

  function close() { open = null; draw(); }

  function draw() {
    if (!players.length) return C.replace(list, h("li", { className: "muted" }, t("No player yet.")));
    C.replace(list, players.map(function (p) {
      var editing = open && open.id === p.id;
      return h("li", { className: "roster-player" },
        h("span", { className: "who" }, h("strong", null, p.name), t("Games played: {n}", { n: p.games })),
        editing ? editor(p) : [
          h("button", { type: "button", className: "fixed", "aria-label": t("Rename") + " " + p.name,
                        onclick: function () { open = { id: p.id, kind: "rename" }; draw(); focusEditor(p); } }, t("Rename")),
          players.length > 1 ? h("button", { type: "button", className: "fixed", "aria-label": t("Merge into…") + " " + p.name,
                        onclick: function () { open = { id: p.id, kind: "merge" }; draw(); focusEditor(p); } }, t("Merge into…")) : null]);
    }));
  }

  function focusEditor(p) {
    var field = document.getElementById("roster-edit-" + p.id);
    if (field) field.focus();
  }

  document.getElementById("roster-add").addEventListener("submit", function (e) {
    e.preventDefault();
    if (!input.value.trim()) return;
    send("/api/players", { name: input.value }, function (p) {
      input.value = "";
      return t("Added: {name}.", { name: p.name });
    });
  });

  C.api("GET", "/api/players").then(function (r) {
    if (r.ok) { players = r.body.players; draw(); }
  });
})();
