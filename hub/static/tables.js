// The big screen: every table's live scores, pushed by the hub (server-sent events).
(function () {
  var tables = {};
  var root = document.getElementById("tables");
  var status = document.getElementById("status");
  var texts = JSON.parse(root.getAttribute("data-texts") || "{}");   // translated by the page
  function text(tag, value, cls) {
    var el = document.createElement(tag);
    el.textContent = value;
    if (cls) el.className = cls;
    return el;
  }
  function draw() {
    root.textContent = "";
    Object.keys(tables).sort().forEach(function (box) {
      var t = tables[box], s = t.state || {};
      var card = document.createElement("section");
      card.className = "live-table";
      card.appendChild(text("h2", box + (s.game ? " · " + s.game : "")));
      var players = s.players || [], counts = s.tokens || s.scores || [];
      var winners = s.winner || [];
      players.forEach(function (name, i) {
        var row = document.createElement("div");
        row.className = "row" + (winners.indexOf(i) >= 0 ? " win" : "");
        row.appendChild(text("span", name));
        row.appendChild(text("b", counts[i] === undefined ? "" : String(counts[i])));
        card.appendChild(row);
      });
      if (!players.length) card.appendChild(text("p", texts.no_game || "No game", "note"));
      root.appendChild(card);
    });
  }
  var source = new EventSource("/api/tables/events");
  source.addEventListener("tables", function (e) {
    tables = {};
    JSON.parse(e.data).tables.forEach(function (t) { tables[t.box] = t; });
    status.textContent = "";
    draw();
  });
  source.addEventListener("table", function (e) {
    var t = JSON.parse(e.data);
    tables[t.box] = t;
    draw();
  });
  source.onerror = function () { status.textContent = texts.reconnecting || "Reconnecting…"; };
})();
