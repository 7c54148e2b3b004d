"""The Third Man on the box: score track, open lead card, secret cards, reveal.

Screens, as a state machine (``self.mode``), always re-derived from the
public state after a change:

``track``      the score track, two seats a row (a 62-px cell each): name
               and score, under them the tokens (dots) and a bar −20..+20;
               a triangle at the seat that leads (the header's
               legend says "▶ leads"), round and bid; the hint line "OK: next
               bid · BACK: menu".  OK → ``lead``; UP/DOWN → ``last`` (the
               last bid again, any button returns).
``lead``       the lead's hand; UP = higher card, DOWN = lower (wrapping),
               OK shows the card (public), BACK returns to the track.
``pass``       "<name> ✓ … Pass the box to <next>": names only.  OK → ``pick``.
``pick``       that seat's own hand (its private view); the cursor starts on
               its lowest card, whatever anyone picked before.  OK locks,
               BACK returns to ``pass`` without entering anything.
``reveal``     a column per seat: name, card, points (or "annulled"); stays
               until a button or REVEAL_S seconds, then ``round_end`` if the
               bid ended the round, else ``track``.  BACK goes on too, and
               opens the menu.
``round_end``  why the round ended in the header (+20, −20, 9 bids:
               :func:`short_reason`), who takes the token, every seat's
               final score (two seats a row).
``match_end``  the match winner and everyone's tokens; OK/BACK → the menu.

Only three text rows fit between the header and the hint line: four seats
go two a row (``score_grid``) or a column each (``seat_columns``), their
names abbreviated distinctly (:func:`distinct_names`), never dropped.

Every screen's bottom line says what OK and BACK do next.  The undo prompt
names the bid it takes back (:func:`describe_undo`): the lead's open card
by its value, a secret card by its seat only.

Presses per bid (the cursor wraps around, so reaching any card of a hand of
n cards takes at most n//2 moves):
    lead:         OK + moves + OK
    each secret:  OK (I have the box) + moves + OK (lock)     × 3
    = 8 presses + the moves (0..5 each, 2.5 on average with a full hand),
    plus one optional press to dismiss the reveal (it also goes by itself).

No unrevealed card is ever drawn after its lock: the ``pass`` screen draws
names only, the next ``pick`` draws the next seat's own hand with the cursor
at a fixed place, and the track shows counts, not hands.  A card entered
from a phone moves the box on like a lock on the buttons.
"""

from __future__ import annotations

from companion.i18n import N_, _

from .. import draw as d
from ..draw import Canvas
from .base import (REVEAL_S, Controller, UndoStep, center_named, hint_line, lead_marker, legend_header, pass_screen,
                   short_name)
from .seat_grid import distinct_names

SEATS = 4
LIMIT = 20          # the round's ±20


def _tokens_choices(players):
    return [(n, str(n)) for n in range(1, 6)]


def _lead_choices(players):
    return [(seat, name) for seat, name in enumerate(players)]


class ThirdManController(Controller):
    game_id = "third-man"
    PRIVATE_MODES = ("pass", "pick")        # a secret entry: off the web mirror
    OPTIONS = [
        {"key": "tokens_to_win", "label": N_("Tokens to win"), "choices": _tokens_choices,
         "default": lambda players: 3},
        {"key": "first_lead", "label": N_("First lead"), "choices": _lead_choices,
         "default": lambda players: 0},
    ]

    def __init__(self, app):
        super().__init__(app)
        self.mode = "track"
        self.seat: int | None = None      # the seat in pass/pick mode
        self.cursor = 0
        self.round_over = False           # the reveal being shown ended a round
        self.revealed = {"lead": None, "round": 1}   # who led the revealed bid, in which round

    # -- following the state ---------------------------------------------------
    def sync(self, public, change) -> None:
        previous, self.public = self.public, public
        if change is None or change.kind in ("action", "undo", "new_game", "resume"):
            if change is not None and change.kind == "action" and change.action_type == "bid" and self._between_bids():
                # The last card is in: everyone's card is shown at once.
                self.round_over = len(public["rounds"]) > len(previous.get("rounds", public["rounds"]))
                self.revealed = {"lead": previous.get("lead"), "round": previous.get("round", public["round"])}
                self._show("reveal")
                self.app.chirp(1)
                return
            self._derive()

    def _between_bids(self) -> bool:
        pending = self.public["pending"]
        return pending["lead_card"] is None and not pending["entered"]

    def _next_secret_seat(self) -> int | None:
        """The next seat in play order after the lead that has not entered."""
        lead, entered = self.public["lead"], set(self.public["pending"]["entered"])
        for step in range(1, SEATS):
            seat = (lead + step) % SEATS
            if seat not in entered:
                return seat
        return None

    def _derive(self) -> None:
        self.app.cancel_timer("third-man")
        p = self.public
        if p["finished"]:
            self._set("match_end")
        elif p["pending"]["lead_card"] is None:
            if self.mode != "lead":
                self._set("track")
            if self.cursor >= len(p["hands"][p["lead"]]):
                self.cursor = 0
        else:
            seat = self._next_secret_seat()
            if self.mode == "pick" and seat == self.seat:
                return                      # still this seat's turn (another kind of change)
            self._set("pass")
            self.seat = seat

    def _set(self, mode: str) -> None:
        if mode != self.mode:
            self.cursor = 0
        self.mode = mode
        self.private = mode == "pick"

    def _show(self, mode: str) -> None:
        """A result screen that goes by itself after REVEAL_S."""
        self._set(mode)
        self.app.set_timer("third-man", REVEAL_S, self._after_result)

    def _after_result(self) -> None:
        if self.mode == "reveal" and self.round_over:
            self.round_over = False
            self._show("round_end")
            self.app.chirp(2)
            return
        self._derive()

    def leave_private(self) -> None:
        if self.mode == "pick":
            self._set("pass")

    def locked_seats(self, public) -> set[int]:
        if not public.get("pending") or public["lead"] is None:
            return set()
        return set(public["pending"]["entered"]) - {public["lead"]}

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        p = self.public
        if self.mode in ("reveal", "round_end"):
            self.app.cancel_timer("third-man")
            self._after_result()        # OK (or UP/DOWN): go on; BACK: go on to the menu
            return name != "back"
        if self.mode == "last":
            self._set("track")          # any button: back to the track
            return True
        if self.mode == "match_end":
            if name == "ok":
                self.app.open_menu()    # a new game, most likely
                return True
            return False
        if self.mode == "track":
            if name == "ok":
                self._set("lead")
                return True
            if name in ("up", "down") and p["last"] is not None:
                just_ended = p["bids"] == 0 and p["rounds"] and not p["last"]["annulled"]
                self.revealed = {"lead": None, "round": len(p["rounds"]) if just_ended else p["round"]}
                self._set("last")       # look at the last bid again
                return True
            return False
        if self.mode == "lead":
            hand = p["hands"][p["lead"]]
            if name in ("up", "down"):
                self.cursor = _move(self.cursor, name, len(hand))
            elif name == "ok":
                self.app.submit({"type": "bid", "seat": p["lead"], "card": hand[self.cursor]})
            elif name == "back":
                self._set("track")
            return True
        if self.mode == "pass":
            if name == "ok":
                self._set("pick")
                return True
            return False
        if self.mode == "pick":
            hand = self._own_hand()
            if name in ("up", "down"):
                self.cursor = _move(self.cursor, name, len(hand))
            elif name == "ok":
                card = hand[self.cursor]
                self._set("pass")       # whatever the answer, the pick is off the screen
                self.app.submit({"type": "bid", "seat": self.seat, "card": card})
            elif name == "back":
                self._set("pass")
            return True
        return False

    def _own_hand(self) -> list[int]:
        """The picking seat's hand, from its private view."""
        return list(self.app.private(self.seat)["hand"])

    # -- screens ---------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        getattr(self, f"_draw_{self.mode}")(c, p)

    def _bid_title(self, p) -> str:
        return _("Round {r} · bid {b}", r=p["round"], b=p["bids"] + 1)

    def _draw_track(self, c: Canvas, p: dict) -> None:
        legend_header(c, self._bid_title(p), _("leads"),
                      _("R{r} · bid {b}", r=p["round"], b=p["bids"] + 1))     # a short title, if need be
        # Two seats a row, each in a 63-px cell: the ▶ (who leads), the
        # name and the score on a text line, the tokens and the −20..+20
        # bar under it (the track: how near the round's end each seat is).
        most = max([1] + [t for t in p["tokens"]])
        names = distinct_names(p["players"], CELL_NAME_W, d.BODY)
        for seat, name in enumerate(p["players"][:SEATS]):
            x0, y = _cell(seat)
            if seat == p["lead"]:
                lead_marker(c, x0 + 1, y + 2)
            c.text(x0 + NAME_X, y, names[seat], d.BODY)
            c.right(x0 + CELL_W, y, d.number(p["scores"][seat]), d.BODY)
            c.dots(x0 + 2, y + d.LINE + 1, p["tokens"][seat], limit=most)
            bar_x = x0 + 2 + most * 5 + 2
            c.bar(bar_x, y + d.LINE + 1, x0 + CELL_W - 1 - bar_x, 5, p["scores"][seat], LIMIT)
        hint_line(c, _("OK: next bid · BACK: menu"))

    def _draw_lead(self, c: Canvas, p: dict) -> None:
        lead = p["players"][p["lead"]]
        c.header(self._bid_title(p))
        center_named(c, d.ROW_Y, lambda n: _("{name} leads: show a card", name=n), lead, (d.BODY,),
                     others=p["players"])
        card_row(c, 30, p["hands"][p["lead"]], self.cursor)
        hint_line(c, _("OK: show · BACK: track"))

    def _draw_pass(self, c: Canvas, p: dict) -> None:
        lead = p["lead"]
        done = [p["players"][s] for s in _order(lead) if s in p["pending"]["entered"] and s != lead]
        right = _("bid {b}", b=p["bids"] + 1)
        # The header keeps its verb: the lead's name gives way ("Marc-A. shows 3").
        room = (d.WIDTH - 2 * d.MARGIN - d.text_width(right, d.SMALL) - 3
                - d.text_width(_("{name} shows {card}", name="", card=p["pending"]["lead_card"]), d.SMALL))
        title = _("{name} shows {card}", name=short_name(p["players"][lead], p["players"], room, d.SMALL),
                  card=p["pending"]["lead_card"])
        pass_screen(c, title, right, done, p["players"][self.seat],
                    _("OK: ready · BACK: menu"), others=p["players"])

    def _draw_pick(self, c: Canvas, p: dict) -> None:
        name = p["players"][self.seat]
        c.private = True
        c.header(_("{name}, your secret card", name=short_name(
            name, p["players"], d.WIDTH - 2 * d.MARGIN - d.text_width(_("{name}, your secret card", name=""), d.SMALL),
            d.SMALL)))
        center_named(c, d.ROW_Y, lambda n: _("{name} shows {card}", name=n, card=p["pending"]["lead_card"]),
                     p["players"][p["lead"]], (d.BODY,), others=p["players"])
        card_row(c, 30, self._own_hand(), self.cursor)
        hint_line(c, _("OK: lock · BACK: pass"))

    def _draw_last(self, c: Canvas, p: dict) -> None:
        self._draw_reveal(c, p, _("Last bid"))

    def _draw_reveal(self, c: Canvas, p: dict, title: str | None = None) -> None:
        last = p["last"]
        if last is None:       # nothing revealed yet (an undo went past it)
            return self._draw_track(c, p)
        lead = self.revealed["lead"]
        right = _("Round {r}", r=self.revealed["round"])
        if title is None:
            title = _("Revealed!")
            if last["annulled"]:         # three or four alike: nobody scores, the same lead bids again
                title, right = _("Annulled: bid again"), ""
        c.header(title, right)
        # A column per seat, as the cards lie on the table: its name, its
        # card (the lead's with ▶), the points it scores.
        name_columns(c, d.ROW_Y, p["players"])
        cards = [("\u25b6" if seat == lead else "") + str(card) for seat, card in enumerate(last["cards"])]
        seat_columns(c, d.ROW_Y + d.PITCH, cards, d.STRONG)
        seat_columns(c, d.ROW_Y + 2 * d.PITCH, [d.signed(v) for v in last["points"]], d.STRONG)
        hint_line(c, _("OK or BACK: back") if self.mode == "last" else _("OK: go on · BACK: menu"))

    def _draw_round_end(self, c: Canvas, p: dict) -> None:
        result = p["rounds"][-1]
        # Three rows under the header: the token (the news), then each seat's
        # final score, two seats a row; why the round ended is short, in the
        # header ("+20", "−20", "9 bids"), its seat being the one whose score says so.
        c.header(_("Round {r} over", r=len(p["rounds"])), short_reason(result["scores"]))
        center_named(c, d.ROW_Y, lambda n: _("Token for {name}", name=n), p["players"][result["token"]],
                     (d.STRONG,), others=p["players"])
        score_grid(c, d.ROW_Y + d.PITCH, p["players"], [d.number(v) for v in result["scores"]])
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_match_end(self, c: Canvas, p: dict) -> None:
        winner = p["winner"][0]
        c.header(_("Match over"), _("tokens"))
        center_named(c, d.ROW_Y, lambda n: _("{name} wins!", name=n), p["players"][winner], (d.STRONG,),
                     others=p["players"])
        score_grid(c, d.ROW_Y + d.PITCH, p["players"], [f"{n}\u25cf" for n in p["tokens"]])
        hint_line(c, _("OK or BACK: menu"))

    # -- the undo prompt ---------------------------------------------------------
    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """What undoing a Third Man bid takes back: the lead's open card by its
    value ("Ann's bid of 5"); a secret card by its seat only ("Ben's
    locked card"), with the reveal it completed, if any."""
    action = step.action
    if action.get("type") != "bid":
        return ""
    name = step.name(action.get("seat"))
    if not step.secret:
        return _("{name}'s bid of {card}", name=name, card=action["card"])
    if step.after.get("last") != step.before.get("last") or step.after.get("round") != step.before.get("round"):
        return _("{name}'s locked card and the reveal", name=name)
    return _("{name}'s locked card", name=name)


def reason_of(scores: list[int]):
    """Why a round ended (rules: +20 or more, −20 or less, or the 9th scored
    bid): a function of the seat's name giving the text, and that seat (None
    for the 9th bid)."""
    high = max(range(len(scores)), key=lambda s: scores[s])
    low = min(range(len(scores)), key=lambda s: scores[s])
    if scores[high] >= LIMIT:
        return (lambda name: _("{name} reached +20", name=name)), high
    if scores[low] <= -LIMIT:
        return (lambda name: _("{name} reached \u221220", name=name)), low
    return (lambda name: _("9 bids played")), None


def round_reason(players: list[str], scores: list[int]) -> str:
    """:func:`reason_of` as one text ("Ann reached +20")."""
    make, seat = reason_of(scores)
    return make(players[seat] if seat is not None else "")


# -- the seats' places on the panel ------------------------------------------------
CELL_W = 62                     # two seats a row, in 62-px cells 4 px apart
NAME_X = 7                      # the name after the ▶ column
CELL_NAME_W = CELL_W - NAME_X - d.text_width("\u221220", d.BODY) - 2
COL_W = (d.WIDTH - 2 * d.MARGIN) // SEATS      # result screens: a 31-px column per seat


def _cell(seat: int) -> tuple[int, int]:
    """The left edge and text line of a seat's cell on the track: two rows of
    a line and a 5-px bar, 18 rows apart (rows 14-31 and 32-49)."""
    return (seat % 2) * (CELL_W + 4), d.ROW_Y + (seat // 2) * (d.LINE + 6)


def score_grid(c: Canvas, y: int, players: list[str], right: list[str]) -> None:
    """Four seats on two rows of the grid (``y`` and the next), two a row:
    the name (abbreviated distinctly) and ``right`` (a score, tokens)."""
    names = distinct_names(players, CELL_W - 2 - d.text_width("\u221220", d.STRONG) - 3, d.BODY)
    for seat, name in enumerate(names[:SEATS]):
        x0 = (seat % 2) * (CELL_W + 4)
        row_y = y + (seat // 2) * d.PITCH
        c.text(x0 + 2, row_y, name, d.BODY)
        c.right(x0 + CELL_W, row_y, right[seat], d.STRONG)


def _column(seat: int) -> tuple[int, int]:
    x0 = d.MARGIN + seat * COL_W + (seat > 1)     # the 2 spare columns between the middle ones
    return x0, x0 + COL_W - 1


def seat_columns(c: Canvas, y: int, texts: list[str], font=d.SMALL) -> None:
    """One text per seat, centred in its column."""
    for seat, text in enumerate(texts[:SEATS]):
        x0, x1 = _column(seat)
        c.center(y, text, font, x0, x1)


def name_columns(c: Canvas, y: int, players: list[str]) -> None:
    """The seats' names in their columns, abbreviated distinctly to fit."""
    seat_columns(c, y, distinct_names(players, COL_W - 2), d.SMALL)


def short_reason(scores: list[int]) -> str:
    """Why a round ended, in a header's right end: "+20", "−20" or "9 bids"."""
    make, seat = reason_of(scores)
    if seat is None:
        return _("9 bids")
    return "+20" if scores[seat] >= LIMIT else "\u221220"


def _move(cursor: int, name: str, size: int) -> int:
    if size == 0:
        return 0
    return (cursor + (1 if name == "up" else -1)) % size


def _order(lead: int) -> list[int]:
    return [(lead + k) % SEATS for k in range(SEATS)]


card_row = d.card_row
