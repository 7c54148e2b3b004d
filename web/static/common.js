/* The phone pages' shared helpers: texts, DOM building, the live
   connection, the API, and what this phone remembers (PIN, seat tokens).
   No library: the box has no internet and a phone's browser is enough. */
(function () {
  "use strict";

  var boot = JSON.parse(document.getElementById("boot").textContent);
  var C = (window.Companion = { boot: boot });

  // -- texts ---------------------------------------------------------------
  // boot.texts maps each English text to its translation (web/pages.py JS_TEXTS).
  C.t = function (text, params) {
    var out = (boot.texts && boot.texts[text]) || text;
    if (params) {
      out = out.replace(/\{(\w+)\}/g, function (whole, key) {
        return Object.prototype.hasOwnProperty.call(params, key) ? String(params[key]) : whole;
      });
    }
    return out;
  };

  // -- DOM -------------------------------------------------------------------
  // h("div", {className: "x", onclick: f}, "text", child, [more]) -- text is
  // always set as text, never parsed as HTML (player names are free text).
  C.h = function (tag, props) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (key) {
        var value = props[key];
        if (value === null || value === undefined || value === false) return;
        if (key === "className") node.className = value;
        else if (key === "text") node.textContent = value;
        else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
        else if (key === "dataset") Object.keys(value).forEach(function (k) { node.dataset[k] = value[k]; });
        else if (value === true) node.setAttribute(key, "");
        else node.setAttribute(key, value);
      });
    }
    append(node, Array.prototype.slice.call(arguments, 2));
    return node;
  };

  function append(node, children) {
    children.forEach(function (child) {
      if (child === null || child === undefined || child === false) return;
      if (Array.isArray(child)) append(node, child);
      else if (typeof child === "object") node.appendChild(child);
      else node.appendChild(document.createTextNode(String(child)));
    });
  }

  // Replace a node's content.  A redraw must not throw a keyboard user's
  // focus back to the top of the page: when the focus was inside, it goes to
  // the new twin of the element that had it (same id, or same tag, data-*
  // and text), if there is one.
  C.replace = function (node) {
    var active = document.activeElement;
    var twin = active && active !== document.body && node.contains(active) ? {
      id: active.id, tag: active.tagName, data: JSON.stringify(active.dataset || {}), text: active.textContent
    } : null;
    while (node.firstChild) node.removeChild(node.firstChild);
    append(node, Array.prototype.slice.call(arguments, 1));
    if (twin) refocus(node, twin);
    return node;
  };

  function refocus(node, twin) {
    var found = twin.id ? document.getElementById(twin.id) : null;
    if (!found || !node.contains(found)) {
      found = Array.prototype.filter.call(node.querySelectorAll(twin.tag), function (el) {
        return JSON.stringify(el.dataset || {}) === twin.data && (twin.data !== "{}" || el.textContent === twin.text);
      })[0];
    }
    if (found && !found.disabled) found.focus({ preventScroll: true });
  }

  // Arrow keys move between the buttons of a group (a hand of cards, a row of
  // choices, tabs), as in any toolbar; Tab still leaves the group.
  var ARROWS = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
  document.addEventListener("keydown", function (e) {
    var step = ARROWS[e.key];
    var target = e.target;
    if (!step || e.altKey || e.ctrlKey || e.metaKey || !target || target.tagName !== "BUTTON") return;
    var group = target.closest(".hand, .choices, .tabs, .card-grid");
    if (!group) return;
    var buttons = Array.prototype.filter.call(group.querySelectorAll("button"), function (b) { return !b.disabled; });
    var i = buttons.indexOf(target);
    if (i < 0 || !buttons.length) return;
    e.preventDefault();
    buttons[(i + step + buttons.length) % buttons.length].focus();
  });

  // What a screen reader should say when the table moves on (a reveal, a
  // round's end): the page's one polite live region (base.html, #announce).
  C.announce = function (text) {
    var region = document.getElementById("announce");
    if (region && text) region.textContent = text;
  };

  // A signed number as players say it: +5, −3 (a real minus sign), 0.
  C.signed = function (n) {
    if (n > 0) return "+" + n;
    if (n < 0) return "\u2212" + Math.abs(n);
    return "0";
  };
  C.number = function (n) {
    return n < 0 ? "\u2212" + Math.abs(n) : String(n);
  };

  // Diabolo's colours (companion/colours.py): a usual colour is stored as its
  // id ("red"), or, in older logs, as a word of any language ("rouge"); each
  // phone says it in its own language.  A name the table typed stays as typed.
  C.colourId = function (name) {
    var ids = boot.colours || {};
    var key = String(name).trim().replace(/\s+/g, " ").toLowerCase();
    return Object.prototype.hasOwnProperty.call(ids, key) ? ids[key] : null;
  };
  C.colour = function (name) {
    var id = C.colourId(name);
    return id ? C.t(id) : String(name);
  };
  // What to store for a colour a person named (typed or picked), given the
  // game's colours so far: the game's own spelling of the same colour (the
  // core compares names exactly), else a usual colour's id, else as typed.
  C.colourValue = function (named, gameColours) {
    named = String(named).trim();
    var id = C.colourId(named);
    var same = (gameColours || []).filter(function (c) {
      return c === named || (id && C.colourId(c) === id) || C.colour(c).toLowerCase() === named.toLowerCase();
    });
    return same.length ? same[0] : (id || named);
  };

  // A label before its value ("Tokens: 3"): the colon is the language's
  // (French puts a no-break space before it), never the script's own.
  C.label = function (label) { return C.t("{label}:", { label: label }); };

  C.names = function (state, seats) {
    return seats.map(function (seat) { return state.players[seat]; }).join(", ");
  };

  C.title = function (gameId) {
    return (boot.titles && boot.titles[gameId]) || gameId;
  };

  // -- the game a table leaves for another (a new one, one resumed from History) --------
  // Nothing is lost (History keeps it, unfinished), but the table should know
  // which game it leaves and where it stood: "The Third Man (Ann, Ben), round
  // 2, stays in History as unfinished: you can resume it there."
  C.whereGameStands = function (s) {
    if (typeof s.round === "number" && (s.game === "third-man" || s.game === "diabolo")) return C.t("round {n}", { n: s.round });
    if (Array.isArray(s.hands) && s.game !== "third-man") return C.t("hand {n}", { n: s.hands.length + 1 });
    return null;
  };
  C.leftUnfinished = function (s) {
    var title = C.title(s.game) + (s.name ? " \u201c" + s.name + "\u201d" : "");
    var params = { game: title, players: (s.players || []).join(", "), where: C.whereGameStands(s) };
    return params.where ? C.t("{game} ({players}), {where}, stays in History as unfinished: you can resume it there.", params)
                        : C.t("{game} ({players}) stays in History as unfinished: you can resume it there.", params);
  };

  C.dot = function (seat) {
    return C.h("span", { className: "dot s" + (seat % 8), "aria-hidden": "true" });
  };

  // -- boxes that scroll sideways ---------------------------------------------------
  // A box that scrolls says so: "more-left"/"more-right" (a shadow on that
  // side, companion.css) while something is hidden there, kept up to date as
  // it scrolls and as the phone turns.  A table whose first column (the
  // names) stays put rests only where a column starts right after the names
  // (scroll snapping, companion.css ".snaps"): a number is never half under
  // them ("10" reading "0").  Its end is padded so that the last position is
  // one of those too.
  var STICKY = "tbody th.who, table.sticky-names tbody th";
  C.scrollCue = function (box) {
    if (!box || box.dataset.cue) return;
    box.dataset.cue = "1";
    var busy = false;
    function update() {
      busy = false;
      var sticky = box.querySelector(STICKY);
      if (sticky && box.getClientRects().length) {
        var origin = box.getBoundingClientRect().left + box.clientLeft;
        var names = sticky.getBoundingClientRect().right - origin;
        box.classList.add("snaps");
        box.style.scrollPaddingLeft = names + "px";
        // The end is padded so that the last position is one of those: room
        // after the table (its layout stays as it is).
        box.style.paddingRight = "";
        var cells = sticky.parentNode.querySelectorAll("td");
        var max = box.scrollWidth - box.clientWidth;
        if (max > 1 && cells.length) {
          // Where each column starts, as a scroll position (the names kept in front).
          var content = origin - box.scrollLeft;
          var starts = Array.prototype.map.call(cells, function (cell) {
            return cell.getBoundingClientRect().left - content - names;
          });
          var last = starts.filter(function (x) { return x >= max - 0.5; })[0];
          if (last !== undefined && last - max > 0.5) box.style.paddingRight = (last - max) + "px";
        }
      }
      var room = box.scrollWidth - box.clientWidth;
      box.classList.toggle("more-left", room > 1 && box.scrollLeft > 1);
      box.classList.toggle("more-right", room > 1 && box.scrollLeft < room - 1);
    }
    function soon() {
      if (busy) return;
      busy = true;
      if (window.requestAnimationFrame) window.requestAnimationFrame(update); else setTimeout(update, 0);
    }
    function sides() {
      var room = box.scrollWidth - box.clientWidth;
      box.classList.toggle("more-left", room > 1 && box.scrollLeft > 1);
      box.classList.toggle("more-right", room > 1 && box.scrollLeft < room - 1);
    }
    // "scrollend" too: a snap that finishes after the last "scroll" still says where it ended.
    box.addEventListener("scroll", sides, { passive: true });
    box.addEventListener("scrollend", sides, { passive: true });
    if (window.ResizeObserver) {
      var watch = new ResizeObserver(soon);
      watch.observe(box);
      var table = box.querySelector("table, svg");
      if (table) watch.observe(table);
    } else {
      window.addEventListener("resize", soon);
    }
    update();
  };

  // Every such box, those of the page and those drawn later.
  function cueAll(root) {
    if (root.nodeType !== 1) return;
    if (root.classList.contains("scroll")) C.scrollCue(root);
    Array.prototype.forEach.call(root.querySelectorAll(".scroll"), C.scrollCue);
  }
  cueAll(document.body);
  if (window.MutationObserver) {
    new MutationObserver(function (changes) {
      changes.forEach(function (change) { Array.prototype.forEach.call(change.addedNodes, cueAll); });
    }).observe(document.body, { childList: true, subtree: true });
  }

  // A sideways-scrolling box shows its latest columns (the last rounds) first,
  // once it is on the page and laid out.
  C.scrollToEnd = function (box) {
    var go = function () {
      C.scrollCue(box);
      box.scrollLeft = box.scrollWidth;
      // Say that there is more to the left: a scrolled box shows no edge of its own.
      var next = box.nextElementSibling;
      var hinted = next && next.classList.contains("scroll-hint");
      if (box.scrollWidth > box.clientWidth + 1 && !hinted && box.parentNode) {
        box.parentNode.insertBefore(C.h("p", { className: "hint scroll-hint" },
          C.t("← Scroll sideways for the earlier ones.")), box.nextSibling);
      }
    };
    if (window.requestAnimationFrame) window.requestAnimationFrame(go); else setTimeout(go, 0);
  };

  // Short names that stay distinct: the shortest start of each name (at least
  // `min` letters, whole letters with their accents) that no other player's
  // name shares; a name that is the start of another stays whole, and two
  // equal names get their seat number.
  C.shortNames = function (players, min) {
    min = min || 3;
    var chars = players.map(function (p) { return Array.from(String(p).normalize ? String(p).normalize("NFC") : String(p)); });
    return chars.map(function (mine, seat) {
      var n = Math.min(min, mine.length);
      for (; n < mine.length; n++) {
        var start = mine.slice(0, n).join("").toLowerCase();
        var shared = chars.some(function (other, k) {
          return k !== seat && other.slice(0, n).join("").toLowerCase() === start;
        });
        if (!shared) break;
      }
      var out = mine.slice(0, n).join("").trim();
      if (n < mine.length) out += "\u2026";
      var twin = chars.some(function (other, k) { return k !== seat && other.join("") === mine.join(""); });
      return twin ? out + " " + (seat + 1) : out;
    });
  };

  // A mark of a few letters per player for tight spots (the ends of the
  // chart's lines): the short name when it is short, else the initials of
  // the name's parts ("Élodie-Françoise Łukasz": "ÉFŁ"); a seat number
  // where two marks would still be the same.
  C.marks = function (players) {
    var short = C.shortNames(players, 3);
    var marks = players.map(function (p, seat) {
      if (Array.from(String(p)).length <= 6) return String(p);
      if (Array.from(short[seat]).length <= 5) return short[seat];
      return String(p).split(/[\s\-]+/).filter(Boolean).map(function (part) { return Array.from(part)[0]; }).join("");
    });
    return marks.map(function (m, seat) {
      return marks.indexOf(m) !== seat || marks.lastIndexOf(m) !== seat ? m + (seat + 1) : m;
    });
  };

  C.message = function (node, text, kind) {
    node.textContent = text || "";
    node.className = "msg" + (kind ? " " + kind : "");
    node.hidden = !text;
  };

  // -- the live connection ----------------------------------------------------
  // EventSource reconnects by itself after a network error; it gives up after
  // an HTTP error (a 503 over the stream cap), so we open a new one then.  A
  // stream can also die silently (the box restarted while this phone slept:
  // nothing ever arrives again), so a stream quiet for 45 s is reopened; the
  // first event of every stream is the whole current state.
  C.live = function (handlers) {
    var badge = document.getElementById("live");
    var source = null;
    var lastEvent = Date.now();
    var retry = null;
    var failures = 0;
    var QUIET_MS = 45000;

    function badgeShown(on) {
      if (badge) badge.hidden = !on;
      document.body.classList.toggle("offline", !!on);
    }

    function heard() {
      lastEvent = Date.now();
      failures = 0;
      badgeShown(false);
    }

    function open() {
      clearTimeout(retry);
      if (source) source.close();
      C.notices([]);            // a new stream announces the notices still standing
      lastEvent = Date.now();
      source = new EventSource(boot.events || "/api/events");
      source.addEventListener("state", function (e) {
        heard();
        handlers.state(JSON.parse(e.data));
      });
      source.addEventListener("seats", function (e) {
        heard();
        if (handlers.seats) handlers.seats(JSON.parse(e.data).seats);
      });
      // The turn clock (clock.js): one event per handover, pause or resume.
      source.addEventListener("clock", function (e) {
        heard();
        if (handlers.clock) handlers.clock(JSON.parse(e.data));
      });
      // What the table must know (a damaged store was repaired, a button is
      // stuck...): the event says that they changed; the texts are fetched in
      // this page's language.
      source.addEventListener("notices", function () {
        heard();
        C.api("GET", "/api/notices").then(function (r) {
          if (r.ok && r.body) C.notices(r.body.notices || []);
        });
      });
      source.onerror = function () {
        badgeShown(true);
        if (source.readyState === 2) {           // CLOSED: the browser will not retry
          failures += 1;
          retry = setTimeout(open, Math.min(2000 * failures, 15000));
        }
      };
    }

    open();
    setInterval(function () {
      if (Date.now() - lastEvent > QUIET_MS) open();
    }, 5000);
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && Date.now() - lastEvent > 10000) open();
    });
    window.addEventListener("online", open);
    return { reopen: open };
  };

  // -- notices -------------------------------------------------------------------
  C.notices = function (texts) {
    var box = document.getElementById("notices");
    if (!box) {
      var main = document.querySelector("main") || document.body;
      box = document.createElement("section");
      box.id = "notices";
      box.className = "card notices";
      box.setAttribute("role", "alert");
      main.insertBefore(box, main.firstChild);
    }
    box.textContent = "";
    texts.forEach(function (text) {
      var p = document.createElement("p");
      p.textContent = "⚠ " + text;
      box.appendChild(p);
    });
    box.hidden = texts.length === 0;
  };

  // -- the API ------------------------------------------------------------------
  // What a refusal says: the box's own one-line message (in the page's
  // language: every request sends ?lang=), or, when the answer is not the
  // box's JSON (a proxy's page, a cut connection), the page's own words --
  // never the browser's English ("Unexpected token '<'...") nor a bare number.
  C.errorText = function (status, text) {
    var data = C.parseJson(text);
    if (data.ok && data.value && typeof data.value.error === "string" && data.value.error) return data.value.error;
    return status ? C.t("The box answered with an error ({status}): try again.", { status: status })
                  : C.t("The box does not answer: try again.");
  };

  // JSON.parse that never throws: {ok: true, value} or {ok: false, error}
  // with the error in the page's language (a browser explains a parse error
  // in its own language, English on most phones, whatever the page speaks).
  C.parseJson = function (text) {
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (e) {
      return { ok: false, error: C.t("This is not written as the box reads it: check its brackets, quotes and commas.") };
    }
  };

  // A field the browser refuses to send (required and empty, a number out
  // of its range...) is explained by the browser in the phone's own
  // language, not the page's: the page says it in its words instead.
  function fieldProblem(field) {
    var v = field.validity;
    if (!v || v.valid) return "";
    if (v.valueMissing) return C.t("Fill in this field first.");
    if ((v.rangeUnderflow || v.rangeOverflow) && field.min !== "" && field.max !== "") {
      return C.t("Give a number from {min} to {max}.", { min: C.number(Number(field.min)), max: C.number(Number(field.max)) });
    }
    if (v.rangeUnderflow) return C.t("Give a number of at least {min}.", { min: C.number(Number(field.min)) });
    if (v.rangeOverflow) return C.t("Give a number of at most {max}.", { max: C.number(Number(field.max)) });
    if (v.stepMismatch || v.badInput) return C.t("Give a whole number.");
    if (v.tooLong) return C.t("This is too long.");
    return C.t("This is not written as the field asks.");
  }
  document.addEventListener("invalid", function (e) {
    var field = e.target;
    if (!field || !field.setCustomValidity) return;
    field.setCustomValidity("");
    field.setCustomValidity(fieldProblem(field));
  }, true);
  ["input", "change"].forEach(function (kind) {
    document.addEventListener(kind, function (e) {
      if (e.target && e.target.setCustomValidity) e.target.setCustomValidity("");
    }, true);
  });

  // Resolves (never rejects) to {ok, status, body, error}: error is the
  // box's own one-line message, in the page's language (C.errorText).
  C.api = function (method, path, body, headers) {
    var options = { method: method, headers: {}, cache: "no-store" };
    Object.keys(headers || {}).forEach(function (k) { options.headers[k] = headers[k]; });
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    var url = path + (path.indexOf("?") < 0 ? "?" : "&") + "lang=" + encodeURIComponent(boot.lang || "en");
    return fetch(url, options).then(function (response) {
      C.pinRefused(response.status, options.headers);
      return response.text().then(function (text) {
        var parsed = text ? C.parseJson(text) : { ok: true, value: null };
        var data = parsed.ok ? parsed.value : null;
        return {
          ok: response.ok, status: response.status, body: data,
          error: response.ok ? null : C.errorText(response.status, text)
        };
      });
    }, function () {
      return { ok: false, status: 0, body: null, error: C.t("The box does not answer: try again.") };
    });
  };

  // -- what this phone remembers ---------------------------------------------------
  // The table PIN and the seat tokens are kept for the box's address
  // (localStorage, not one tab's sessionStorage): a phone that gave the PIN
  // once is not asked again on another page, in another tab or after a
  // reload, until the box refuses it (a new PIN was drawn, the box
  // restarted): then it is forgotten and the page asks again.  The PIN is
  // on the box's panel for the whole table to read (docs/security.md,
  // "Seats and tokens"), so keeping it on the phone tells no one anything
  // new; the owner's password is never kept.
  function store(kind) {
    try { return window[kind]; } catch (e) { return null; }
  }

  // The owner's password as a header value: a header carries bytes (fetch
  // takes only Latin-1 characters), so the password goes as its UTF-8 bytes
  // and the box reads them back as UTF-8 (web/guards.py): "Clé-Œuvre €" too.
  C.ownerHeader = function (password) { return unescape(encodeURIComponent(password)); };

  var PIN_KEY = "companion.pin";
  C.pin = {
    get: function () {
      var kept = store("localStorage"), tab = store("sessionStorage");
      var pin = (kept && kept.getItem(PIN_KEY)) || "";
      if (!pin && tab && tab.getItem(PIN_KEY)) {
        // A PIN an older page kept for its tab only: kept for the phone from now on.
        pin = tab.getItem(PIN_KEY);
        C.pin.set(pin);
      }
      return pin;
    },
    set: function (pin) {
      var kept = store("localStorage"), tab = store("sessionStorage");
      try { if (kept) kept.setItem(PIN_KEY, pin); } catch (e) { /* private mode: this page only */ }
      if (tab) tab.removeItem(PIN_KEY);
    },
    clear: function () {
      [store("localStorage"), store("sessionStorage")].forEach(function (s) { if (s) s.removeItem(PIN_KEY); });
    }
  };

  // A request that showed the kept PIN and was refused for it (403: the
  // box drew a new PIN, or a restore changed it) forgets it, whichever page
  // sent it: the page then asks again.  (A 403 with the owner's password is
  // about that password; with a right PIN the box never answers 403.)
  C.pinRefused = function (status, headers) {
    var sent = headers && headers["X-Table-Pin"];
    if (status === 403 && sent && !headers["X-Owner-Password"] && sent === C.pin.get()) C.pin.clear();
  };

  function tokens() {
    var s = store("localStorage");
    try { return JSON.parse((s && s.getItem("companion.seats")) || "{}") || {}; } catch (e) { return {}; }
  }
  function saveTokens(all) {
    var s = store("localStorage");
    if (s) s.setItem("companion.seats", JSON.stringify(all));
  }
  C.seatToken = {
    get: function (seat) { return tokens()[seat] || null; },
    set: function (seat, token) { var all = tokens(); all[seat] = token; saveTokens(all); },
    clear: function (seat) { var all = tokens(); delete all[seat]; saveTokens(all); },
    seats: function () { return Object.keys(tokens()).map(Number); }
  };
})();
