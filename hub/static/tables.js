// The big screen: every table's live scores, pushed by the hub (server-sent events).
//
// Made for a club's screen across the room (1920x1080 or 1280x720): the
// grid is sized so that every table fits the window at once, with the
// largest text that allows; when that text would be too small to read
// (many tables on a small screen) the tables are split into pages that
// turn by themselves.  Boxes in natural order (live-2 before live-10), the
// game's title in the page's language, a finished table and a quiet one
// (no change for QUIET_MIN minutes) marked.  An event redraws its own card.
(function () {
  var tables = {}, cards = {};
  var root = document.getElementById("tables");
  var status = document.getElementById("status");
  var pager = document.getElementById("pager");
  var texts = JSON.parse(root.getAttribute("data-texts") || "{}");   // translated by the page
  var titles = texts.titles || {};
  var lang = document.documentElement.lang || "en";
  var order = (window.Intl && Intl.Collator) ? new Intl.Collator(lang, {numeric: true, sensitivity: "base"}).compare
    : function (a, b) { return a < b ? -1 : a > b ? 1 : 0; };
  var PAGE_S = Number(root.getAttribute("data-page-seconds")) || 12;
  var QUIET_MIN = 10, MIN_FONT = 18;
  var EM_WIDE = 10;            // a card's width in ems: "live-10  The Third Man", "Chloé  12"
  var page = 0, pages = 1, perPage = 0;

  function text(tag, value, cls) {
    var el = document.createElement(tag);
    el.textContent = value;
    if (cls) el.className = cls;
    return el;
  }
  function fill(template, values) {
    return String(template).replace(/\{(\w+)\}/g, function (m, k) { return values[k] === undefined ? m : values[k]; });
  }
  function card(box) {
    var t = tables[box], s = t.state || {};
    var el = document.createElement("section");
    var quiet = !s.finished && t.updated && (Date.now() - Date.parse(t.updated)) > QUIET_MIN * 60000;
    el.className = "live-table" + (s.finished ? " finished" : "") + (quiet ? " quiet" : "");
    el.setAttribute("data-box", box);
    var head = document.createElement("h2");
    head.appendChild(text("span", box, "box"));
    if (s.game) head.appendChild(text("span", titles[s.game] || s.game, "game"));
    el.appendChild(head);
    var players = s.players || [], counts = s.tokens || s.scores || [];
    var winners = s.winner || [];
    players.forEach(function (name, i) {
      var row = document.createElement("div");
      row.className = "row" + (winners.indexOf(i) >= 0 ? " win" : "");
      row.appendChild(text("span", name));
      row.appendChild(text("b", counts[i] === undefined ? "" : String(counts[i])));
      el.appendChild(row);
    });
    if (!players.length) el.appendChild(text("p", texts.no_game || "No game", "note"));
    if (s.finished) el.appendChild(text("p", texts.finished || "Finished", "mark"));
    else if (quiet) {
      var at = new Date(Date.parse(t.updated));
      var hm = ("0" + at.getHours()).slice(-2) + ":" + ("0" + at.getMinutes()).slice(-2);
      el.appendChild(text("p", fill(texts.quiet || "Quiet since {time}", {time: hm}), "mark"));
    }
    return el;
  }
  var measured = 0, measuring = false;
  function tall() { return measured || lines() * 1.2 + 0.6; }     // a card's height in ems
  function lines() {
    var most = 2;
    Object.keys(tables).forEach(function (b) {
      most = Math.max(most, ((tables[b].state || {}).players || []).length);
    });
    return most + 2;          // the title, the players, the mark
  }
  // The columns and font size that fit n cards in the window, largest text first.
  function layout(n) {
    var w = root.clientWidth || window.innerWidth;
    var h = window.innerHeight - root.getBoundingClientRect().top - (pager ? pager.offsetHeight : 0) - 8;
    var best = {cols: 1, font: 0};
    for (var c = 1; c <= Math.max(1, n); c++) {
      var rows = Math.ceil(n / c);
      var font = Math.min((w / c - 12) / EM_WIDE, (h / rows - 12) / tall());
      if (font > best.font) best = {cols: c, rows: rows, font: font};
    }
    return best;
  }
  function draw() {
    var boxes = Object.keys(tables).sort(order);
    var fit = layout(boxes.length);
    if (fit.font >= MIN_FONT || boxes.length <= 1) {
      pages = 1; perPage = boxes.length;
    } else {                   // too many to read at once: pages of what fits at MIN_FONT
      var w = root.clientWidth || window.innerWidth;
      var h = window.innerHeight - root.getBoundingClientRect().top - 40;
      var cols = Math.max(1, Math.floor(w / (MIN_FONT * EM_WIDE + 12)));
      var rows = Math.max(1, Math.floor(h / (MIN_FONT * tall() + 12)));
      pages = Math.ceil(boxes.length / (cols * rows));
      perPage = Math.ceil(boxes.length / pages);          // pages evenly filled
      fit = layout(perPage);
    }
    if (page >= pages) page = 0;
    root.style.gridTemplateColumns = "repeat(" + fit.cols + ", minmax(0, 1fr))";
    root.style.fontSize = Math.max(10, Math.floor(fit.font)) + "px";
    root.textContent = "";
    cards = {};
    boxes.slice(page * perPage, (page + 1) * perPage).forEach(function (box) {
      cards[box] = card(box);
      root.appendChild(cards[box]);
    });
    // The cards' real height, in ems, for the next layout (the estimate is
    // only a start: fonts differ between screens).
    var font = parseFloat(root.style.fontSize), most = 0;
    Object.keys(cards).forEach(function (b) { most = Math.max(most, cards[b].offsetHeight); });
    if (most && font && !measuring && Math.abs(most / font - tall()) > 0.25) {
      measured = most / font;
      measuring = true;
      draw();
      measuring = false;
      return;
    }
    if (pager) pager.textContent = pages > 1 ? fill(texts.page || "Page {n} of {count}", {n: page + 1, count: pages}) : "";
    root.setAttribute("data-page", String(page + 1));
    root.setAttribute("data-pages", String(pages));
  }
  function update(t) {
    var known = tables.hasOwnProperty(t.box);
    tables[t.box] = t;
    if (known && cards[t.box]) {       // its own card only
      var fresh = card(t.box);
      root.replaceChild(fresh, cards[t.box]);
      cards[t.box] = fresh;
    } else if (!known) {
      draw();
    }
  }
  setInterval(function () {            // turn the page; and mark the tables gone quiet
    if (pages > 1) page = (page + 1) % pages;
    draw();
  }, PAGE_S * 1000);
  window.addEventListener("resize", draw);
  var source = new EventSource("/api/tables/events");
  source.addEventListener("tables", function (e) {
    tables = {};
    JSON.parse(e.data).tables.forEach(function (t) { tables[t.box] = t; });
    status.textContent = "";
    draw();
  });
  source.addEventListener("table", function (e) { update(JSON.parse(e.data)); });
  source.onerror = function () { status.textContent = texts.reconnecting || "Reconnecting…"; };
})();
