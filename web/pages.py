"""The phone pages, and the score history their chart reads.

    GET /                 the scoreboard (no login): live from /api/events
    GET /seat             pick a free seat and claim it (the PIN is asked on the page)
    GET /seat/<n>         one seat's page: its private view and its secret entry (and, in
                          the free scoreboard, every seat's points and tokens, with the PIN)
    GET /control          table control with the PIN: the game's entry panel (points and
                          tokens by a tap in the free scoreboard), undo, new game, releases,
                          and, folded under "Advanced", any one action typed by hand
    GET /join             the table's URL as a QR code (never the PIN)
    GET /api/history/current   the current game's steps still in effect, secrets redacted

(``/api/history/current``, not ``/api/history``: web/history.py answers
``/api/history`` with the list of stored games; ``current`` is no game id.)

Every page is server-rendered just enough to be read before its script
runs (names, scores, tokens), then the page's script takes over and
follows ``/api/events``.  All text goes through :func:`companion.i18n._`:
in templates ``_`` is bound to the request's language, and the texts the
scripts build are rendered into the page as one dictionary (``JS_TEXTS``)
from the same catalogue.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlencode

from flask import Blueprint, Response, current_app, render_template, request, url_for

from companion import games as game_registry
from companion.colours import names_to_ids
from companion.history import game_name, public_steps
from companion.i18n import LANGUAGES, N_, gettext

from .app import companion
from .errors import LANG_COOKIE, request_language

bp = Blueprint("pages", __name__)

STATIC = Path(__file__).with_name("static")

# Every text the pages' scripts build, in English (the catalogue's msgid).
# The page carries {english: translated} for its language; scripts call
# t("english {param}", {param: ...}).  tests/web/test_pages.py checks that every
# t("...") in web/static/*.js is listed here, so the catalogue misses none.
JS_TEXTS = [
    # live connection, and what a refusal says when the box's own words are missing (common.js)
    N_("reconnecting…"), N_("connected"), N_("{label}:"),
    N_("The box answered with an error ({status}): try again."),
    N_("This is not written as the box reads it: check its brackets, quotes and commas."),
    # a field the browser would refuse in the phone's language (common.js)
    N_("Fill in this field first."), N_("Give a number from {min} to {max}."), N_("Give a number of at least {min}."),
    N_("Give a number of at most {max}."), N_("Give a whole number."), N_("This is too long."),
    N_("This is not written as the field asks."),
    # the turn clock (clock.js)
    N_("Turn clock"), N_("Time up!"), N_("paused"), N_("End the turn"), N_("End my turn"), N_("Pause"),
    N_("Go on"), N_("Fischer"), N_("Delay"), N_("Sudden death"), N_("Mode"), N_("Minutes per player"),
    N_("Increment or delay (seconds)"), N_("Start a new clock"),
    # generic board
    N_("No game yet."), N_("Start one from the box or from the table control."),
    N_("Game over"), N_("{name} wins!"), N_("Shared win: {names}"),
    N_("Score"), N_("Tokens"), N_("Player"), N_("leads"), N_("to play"), N_("deals"), N_("out"),
    N_("bidder"), N_("winner"), N_("entered ✓"), N_("shows {card}"),
    N_("Scores over time"), N_("History"), N_("Show all ({n})"), N_("Nothing yet."),
    N_("Bids of round {n}"), N_("Other details"),
    # The Third Man
    N_("Round {r} · bid {b}"), N_("Cards"), N_("{name} leads: waiting for a card"),
    N_("{name} shows {card}"), N_("Waiting for {names}"), N_("All cards are in"),
    N_("Last bid"), N_("Annulled: bid again"), N_("Bids this round"), N_("Past rounds"),
    N_("Bid"), N_("Round"), N_("Token"), N_("round {n} final"), N_("Revealed!"),
    # Costly Tricks
    N_("Tricks"), N_("Hand points"), N_("Hands won"), N_("{name}'s dummy"), N_("Last trick"),
    N_("{card} led"), N_("{card} follows"), N_("{card} is a discard ({suit} was displaced)"),
    N_("{card} makes {suit} trump, displacing {old}"), N_("{card} makes {suit} trump"),
    N_("{card} is a trump"), N_("{card} wins"), N_("{seat} wins the trick: {points} points"),
    N_("Tricks this hand"), N_("Past hands"), N_("Hand"), N_("Points"), N_("nobody"),
    N_("Deal: {seat} leads"), N_("Trick to {seat}: {points} points"),
    N_("{seat} leads the next trick"), N_("Between hands: waiting for the deal"),
    # FIGHT?
    N_("Money"), N_("Coins"), N_("On the table"), N_("{name} to play"),
    N_("{name} plays {coin}, takes {take}"), N_("{name} plays {coin}"), N_("Out, in order"),
    # Sloppy Seconds
    N_("Dealer: {name}"), N_("Trump: {suit}"), N_("No trump yet"), N_("Not trump: {suit}"),
    N_("Tricks played: {n}"), N_("Taken this hand"), N_("Hand entered"),
    N_("Trick: {cards} → {name}"), N_("{name} wins"),
    # Yenta
    N_("Dice"), N_("Bid: {name}, {amount}"), N_("No bid yet"), N_("{name} bids {amount}"),
    N_("{name} asks {target} for {value}: hit"), N_("{name} asks {target} for {value}: miss"),
    N_("{name} passes"), N_("{name}'s last dice: {dice}"), N_("Change"),
    # Diabolo
    N_("Round {r}"), N_("Double"), N_("spent"), N_("in hand"), N_("Scored this round: {colors}"),
    N_("Nothing scored yet this round"), N_("Deciding doubles for {color}: {names}"),
    N_("{name}: {value} on {color} ({side})"), N_("heaven"), N_("hell"),
    N_("{name} entered a double decision for {color}"), N_("{name} plays the double on {color}"),
    N_("{name} keeps the double ({color})"), N_("{color} scored: heaven {heaven}, hell {hell}"),
    N_("{color} scored"), N_("Colours"),
    # Scoreboard
    N_("Secret round: {names} entered"), N_("Last reveal"), N_("{name} {points}"),
    N_("{name}: token {delta}"), N_("{name} entered a secret"), N_("{name}'s secret: {value}"),
    N_("Reveals"),
    # seat pages
    N_("Take a seat"), N_("Your seat"), N_("free"), N_("taken by {label}"), N_("yours"),
    N_("Take this seat"), N_("Open"), N_("Table PIN"), N_("Name of this phone (shown on the box)"),
    N_("phone"), N_("The PIN is shown on the box."), N_("Enter the table PIN first."),
    N_("Release this seat"), N_("Seat released."), N_("This phone does not hold seat {n}."),
    N_("This seat is taken by another phone ({label}). The PIN holder can release it."),
    N_("This phone's claim has ended (released, or the box restarted)."),
    N_("There is no seat {n} in this game."), N_("Back to the seats"),
    N_("You lead: show a card (everyone sees it)."), N_("Show {card}"), N_("Lock {card}"),
    N_("Waiting for {name} to show a card."), N_("You showed {card}."),
    N_("{name} shows {card}. Pick your secret card:"), N_("Your card: {card}"),
    N_("locked ✓ — nobody else sees it until the reveal"), N_("Tap a card, then confirm."),
    N_("Entered at the table ✓ — no phone sees it until the reveal"),
    N_("Your hand"), N_("The match is over."), N_("Enter a secret number"),
    N_("Enter secretly"), N_("Your secret: {value}"), N_("Enter a whole number."),
    N_("Your double is spent for this round."), N_("Colour"), N_("Play my double on {color}"),
    N_("Keep it"), N_("Your decision for {color}: play the double"),
    N_("Your decision for {color}: keep it"), N_("Name the colour being scored."),
    N_("Nothing secret to enter in this game: follow the scoreboard."),
    N_("Sending…"), N_("The box does not answer: try again."),
    # setup and the owner
    N_("The two owner passwords differ."), N_("Enter the owner password first."),
    N_("Asked: the box applies it in a moment."), N_("The box is back in set-up: reload this page."),
    N_("Saved"), N_("The table's name: {name}"), N_("Language: {language}"), N_("Time zone: {zone}"),
    N_("Owner password: chosen (keep it: updates and restoring a backup ask for it)"), N_("SSH key: added"),
    N_("Open the scoreboard"),
    # control
    N_("Table control"), N_("Save PIN"), N_("Forget PIN"), N_("PIN saved on this phone."),
    N_("Undo the last action"), N_("Really undo?"), N_("Yes, undo"), N_("Cancel"), N_("Undone."),
    N_("Seats"), N_("Release"), N_("Released."), N_("No seat is claimed."),
    N_("← Scroll sideways for the earlier ones."),
    N_("Revealed: {cards}"), N_("Round {n} over"), N_("Hand {n} over"), N_("{name} takes a token"),
    # what just happened: a round's, a hand's or a trick's result (games.js result())
    N_("{name} reached +20"), N_("{name} reached −20"), N_("9 bids played"), N_("No token: 0 to 0"),
    N_("{points} points, {tricks} tricks"), N_("Hand {h} scored"), N_("{change}, now {total}"),
    N_("{name} made {bid}"), N_("{name} lost {bid}"), N_("{name} is out: no coins left"), N_("Nobody scores"),
    N_("New game"), N_("Game"), N_("Players"), N_("Add a player"), N_("Remove"),
    N_("Options"), N_("default: {value}"), N_("Start the game"), N_("Started."),
    N_("Tap a name to add it:"), N_("{n} players"), N_("{lo} to {hi} players"),
    N_("Any action"), N_("One action as JSON, checked by the box."), N_("Send"), N_("Done."),
    N_("Examples"), N_("not valid JSON: {detail}"), N_("'{name}' is not valid JSON"),
    N_("Current game: {title}"), N_("Tokens to win"), N_("First lead"), N_("Hands to win"),
    N_("First player"), N_("Target score"), N_("First dealer"),
    N_("Game name (for BG Stats)"), N_("BoardGameGeek id"),
    # control: the entry panels (web/static/entry*.js)
    N_("red"), N_("blue"), N_("black"), N_("green"), N_("yellow"), N_("purple"),
    N_("Trick entered."), N_("Hand entered."), N_("Enter the trick"), N_("Clear the trick"),
    N_("Tap {n} more cards in play order"), N_("played"), N_("trump"), N_("never trump"),
    N_("Who has the red 0? That seat leads the first trick."), N_("Dealt: {seat} leads."),
    N_("By cards"), N_("Quick"), N_("Won by"), N_("the last trick takes what is left"),
    N_("Trick {n} of 11 · {left} points still out"), N_("A trick holds 0 to 40 points."),
    N_("Only {left} points are still out."), N_("Suit names"), N_("Suit {n}"),
    N_("The names the log uses for the four suits. A suit already played this hand keeps its name."),
    N_("Give four different names."), N_("Use these names"),
    N_("Trick by trick"), N_("Suit totals"), N_("Check"), N_("{sum} > {want}"), N_("Enter the hand"),
    N_("This hand scores: {scores}"), N_("Each suit's totals must add up to its points."),
    N_("Card points taken per suit; the last row is what is left of each suit."),
    N_("no change"), N_("{name}: which coin?"), N_("Change from the table (at most {max}):"),
    N_("Hint"), N_("Thinking…"), N_("Play {coin}, take {take}"), N_("Play the hint"),
    N_("Who won the auction?"), N_("Enter the bid"), N_("{name} asks…"), N_("Whom"), N_("For a"),
    N_("{n} dice"), N_("Hit"), N_("Miss"), N_("{name} alone has dice left: tap its {n} dice"),
    N_("Take back the last die"), N_("Enter the last dice"),
    N_("Another name"), N_("Use"), N_("Hand sums in {color}"), N_("Row tracked: heaven {heaven}, hell {hell}"),
    N_("Heaven and hell come from the tracked rows."),
    N_("Secret double decisions entered: {names}. This score reveals them."),
    N_("Doubles announced aloud"),
    N_("Only if the table announces doubles instead of entering them secretly on the seat pages or the box."),
    N_("Name the colour, then every hand sum and both sides of the row."),
    N_("{name} takes {color}: {points}"), N_("(doubled if played)"),
    N_("Heaven equals hell: nobody scores {color}."), N_("Score {color}"),
    N_("{color} has secret double decisions: it must score positive (undo them first)."),
    N_("No card placed this round."), N_("The play of this round has ended: score its colours."),
    N_("This round is being scored: no more cards are placed."), N_("{name} places a card"),
    N_("Place it"), N_("Rows, card by card (optional)"),
    # table control: the club hub's tournament table (GET /api/hub)
    N_("Tournament round {round}, table {table}"), N_("Start the tournament table"),
    # history step lines in the phone's language (issue 19)
    N_("{name} entered a card"), N_("{name} plays {card}"), N_("Trick: {cards}"),
    # points and tokens by a tap (points.js: the control and the seat pages)
    N_("Add"), N_("you"), N_("Points for {name}"), N_("Tokens: {n}"), N_("{delta} token for {name}"),
    N_("Undo this"), N_("Undone: {what}"),
    N_("Type the points first (a minus sign takes them off)."),
    # what a step that ends or leaves something says first (control.js, seat.js)
    N_("Start a new game?"), N_("Start the new game"), N_("round {n}"), N_("hand {n}"),
    N_("{game} ({players}), {where}, stays in History as unfinished: you can resume it there."),
    N_("{game} ({players}) stays in History as unfinished: you can resume it there."),
    N_("The phones' seats are released."), N_("Seats taken by phones: {n}"), N_("Release the seat"),
    N_("Release seat {n} ({name})? The phone “{label}” stops reading and entering for it; what it entered stays."),
    N_("Give up seat {n} ({name})? This phone stops reading and entering for it; what it entered stays. "
       "A phone with the PIN can take it again."),
    N_("Now tap a free seat."), N_("No seat is free."),
    N_("Points for every player need the table PIN, shown on the box."),
]


def _tr(language: str):
    def translate(message: str, **params) -> str:
        return gettext(message, language, **params)
    return translate


# The page's language switch: each language named in itself, so that anyone
# finds theirs whatever the page speaks now.
LANGUAGE_NAMES = {"en": ("EN", "English"), "fr": ("FR", "Français")}
LANG_COOKIE_AGE = 400 * 24 * 3600     # as long as browsers keep a cookie


@bp.app_context_processor
def _page_globals():
    """``_`` (bound to the request's language), ``lang``, ``static(file)``,
    the table's friendly name and the language switch (``languages``,
    ``lang_url(code)``), for every template (dev.html too)."""
    language = request_language()
    name = companion().config.get("name") or "companion"
    languages = [(code, *LANGUAGE_NAMES.get(code, (code.upper(), code))) for code in LANGUAGES]
    return {"_": _tr(language), "lang": language, "static": _static_url, "table_name": name,
            "languages": languages, "lang_url": _lang_url}


@bp.app_template_filter("number")
def number(value, spec: str = "") -> str:
    """A number as the pages show it: a negative one with a real minus sign
    (U+2212 "−", as common.js's C.number and the box's draw.signed), never a
    hyphen; ``spec`` is a format spec ("g" for an average)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    text = format(abs(value), spec)
    return "\u2212" + text if value < 0 and text.strip("0.") else text


def _lang_url(code: str) -> str:
    """This page in language ``code``: a query-only link (same path, the
    other parameters kept), answered with the ``lang`` cookie that keeps
    the choice on every page after it."""
    args = [(k, v) for k, v in request.args.items(multi=True) if k != "lang"]
    return "?" + urlencode(args + [("lang", code)])


def _chosen_language(value: str) -> str | None:
    code = value.replace("_", "-").split("-")[0].strip().lower()
    return code if code in LANGUAGES else None


@bp.after_app_request
def _remember_language(response: Response) -> Response:
    """A page asked for with ``?lang=xx`` (the switch) sets the ``lang``
    cookie, which web/errors.py's ``request_language`` reads after ``?lang``:
    the phone keeps its choice over Accept-Language.  The API's ``?lang=``
    (the scripts send the page's language) sets nothing."""
    code = _chosen_language(request.args.get("lang", ""))
    if code and request.method == "GET" and response.mimetype == "text/html":
        response.set_cookie(LANG_COOKIE, code, max_age=LANG_COOKIE_AGE, path="/", samesite="Lax")
    return response


def _static_url(filename: str) -> str:
    """A static file's URL with its content hash: phones may cache it forever
    and still get the new one after an update of the box."""
    return url_for("static", filename=filename, v=_file_hash(filename))


@lru_cache(maxsize=64)
def _file_hash(filename: str) -> str:
    try:
        return hashlib.sha256((STATIC / filename).read_bytes()).hexdigest()[:10]
    except OSError:
        return "0"


def _common(page: str, **extra) -> dict:
    """What every page's script needs: the texts, the titles, the state."""
    c = companion()
    language = request_language()
    with c.session.lock:
        _version, state = c.session.snapshot()
        log = c.session.timeline.log
        name = game_name(log[0]) if log else None      # "Carcassonne": a scoreboard game the table named
    titles = {}
    for game_id in game_registry.available():
        titles[game_id] = gettext(game_registry.get(game_id).title, language)
    boot = {"page": page, "lang": language, "events": url_for("api.events"), "state": state,
            "seats": c.public_seats()["seats"], "titles": titles, "game_name": name,
            "texts": {k: gettext(k, language) for k in JS_TEXTS},
            "colours": names_to_ids()}      # a usual colour in any language -> its id (companion/colours.py)
    boot.update(extra)
    return {"boot": boot, "state": state, "titles": titles, "seats": boot["seats"],
            "page": page, "game_name": name}


def _html(template: str, **context) -> Response:
    response = Response(render_template(template, **context), mimetype="text/html")
    response.headers["Cache-Control"] = "no-store"
    response.headers["Content-Language"] = request_language()
    response.headers["Vary"] = "Accept-Language, Cookie"
    return response


@bp.get("/")
def index():
    return _html("index.html", **_common("board"))


@bp.get("/seat")
def seats():
    return _html("seat.html", seat=None, **_common("seats"))


@bp.get("/seat/<int:seat>")
def seat(seat: int):
    return _html("seat.html", seat=seat, **_common("seat", seat=seat))


# The games with an entry panel on /control (web/static/entry-<id>.js each).
ENTRY_GAMES = ("costly-tricks", "sloppy-seconds", "fight", "yenta", "diabolo", "scoreboard")


@bp.get("/control")
def control():
    return _html("control.html", entry_games=ENTRY_GAMES, **_common("control"))


@bp.get("/join")
def join():
    c = companion()
    url = c.join_url(request.host_url)
    return _html("join.html", url=url, qr=qr_svg(url), **_common("join"))


def qr_svg(url: str) -> str:
    """The table's URL as an inline SVG QR code that scales to its box
    (a viewBox, no fixed size); error level M like the OLED's."""
    try:
        import segno

        return segno.make(url, error="m").svg_inline(scale=1, border=2, omitsize=True,
                                                     dark="#000", light="#fff")
    except Exception:           # no QR is no reason to lose the page
        return ""


# -- the score history ------------------------------------------------------------

@bp.get("/api/history/current")
def history():
    """The current game's steps still in effect (an undone step is gone, as
    on the table), secrets redacted until revealed::

        {"game": "third-man", "players": [...],
         "steps": [{"n": 1, "action": {...}, "state": {full public state}},
                   {"n": 2, "action": {...}, "state": {only the keys that changed}}, ...]}

    Replaying the log costs a few ms per hundred actions; the answer is
    kept per (game, timeline, pushes), so a table of phones fetching it after
    every change replays the log once per change."""
    c = companion()
    session = c.session
    with session.lock:
        # Not the log's length: an undo that takes back an unrevealed secret
        # shortens the log (the pair leaves it).  A resume makes a new timeline.
        key = (session.game_id, id(session.timeline), session.timeline.pushes)
        cache = current_app.extensions.setdefault("pages.current_history", {})
        body = cache.get(key)
        lines = None if body is not None or not session.timeline.started else session.export_lines()
    if body is None:
        body = _encode(_history_body(lines))
        cache.clear()               # only the latest is worth keeping
        cache[key] = body
    return Response(body, mimetype="application/json", headers={"Cache-Control": "no-store"})


def _encode(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _history_body(lines) -> dict:
    if lines is None:
        return {"game": None, "players": [], "steps": []}
    in_effect: list[dict] = []
    for step in public_steps(lines):
        if step["action"].get("type") == "undo":
            if len(in_effect) > 1:
                in_effect.pop()
        else:
            in_effect.append(step)
    steps = []
    previous: dict | None = None
    for step in in_effect:
        state = step["state"]
        changed = state if previous is None else {k: v for k, v in state.items() if previous.get(k) != v}
        steps.append({"n": step["n"], "action": step["action"], "state": changed})
        previous = state
    first = in_effect[0]["state"] if in_effect else {}
    return {"game": first.get("game"), "players": first.get("players", []), "steps": steps}
