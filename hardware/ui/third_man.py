"""The Third Man on the box: score track, open lead card, secret cards, reveal.

Screens, as a state machine (``self.mode``), always re-derived from the
public state after a change:

``track``      the score track: names, scores with a bar −20..+20, tokens
               (dots), a triangle at the seat that leads, round, bid, cards
               left in each hand.  OK → ``lead``; UP/DOWN → ``last`` (the
               last bid again, any button returns).
``lead``       the lead's hand; UP = higher card, DOWN = lower (wrapping),
               OK shows the card (public), BACK returns to the track.
``pass``       "<name> ✓ … Pass the box to <next>": names only.  OK → ``pick``.
``pick``       that seat's own hand (its private view); the cursor starts on
               its lowest card, whatever anyone picked before.  OK locks,
               BACK returns to ``pass`` without entering anything.
``reveal``     all four cards and the points each (or "annulled"); stays
               until a button or REVEAL_S seconds, then ``round_end`` if the
               bid ended the round, else ``track``.
``round_end``  the round's token winner and everyone's tokens.
``match_end``  the match winner; OK/BACK → the menu.

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
from .base import REVEAL_S, Controller, lead_marker, pass_screen, result_screen

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
            self._after_result()        # any button: go on
            return True
        if self.mode == "last":
            self._set("track")
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
        cards = max(len(h) for h in p["hands"])
        c.header(self._bid_title(p), _("{n} cards", n=cards))
        for seat, name in enumerate(p["players"]):
            y = 14 + seat * 12
            if seat == p["lead"]:
                lead_marker(c, 0, y + 3)
            c.text_fit(5, y, name, 48, d.BODY)
            c.dots(55, y + 4, p["tokens"][seat], limit=3)
            c.right(93, y, d.number(p["scores"][seat]), d.BODY)
            c.bar(96, y + 1, 32, 9, p["scores"][seat], LIMIT)

    def _draw_lead(self, c: Canvas, p: dict) -> None:
        lead = p["players"][p["lead"]]
        c.header(self._bid_title(p))
        c.center(15, _("{name} leads: show a card", name=lead), d.BODY)
        card_row(c, 31, p["hands"][p["lead"]], self.cursor)
        c.footer(_("▲▼ choose · OK show"))

    def _draw_pass(self, c: Canvas, p: dict) -> None:
        lead = p["lead"]
        done = [p["players"][s] for s in _order(lead) if s in p["pending"]["entered"] and s != lead]
        pass_screen(c, _("{name} shows {card}", name=p["players"][lead], card=p["pending"]["lead_card"]),
                    _("bid {b}", b=p["bids"] + 1), done, p["players"][self.seat])

    def _draw_pick(self, c: Canvas, p: dict) -> None:
        name = p["players"][self.seat]
        c.private = True
        c.header(_("{name}, your secret card", name=name))
        c.center(15, _("{name} shows {card}", name=p["players"][p["lead"]], card=p["pending"]["lead_card"]), d.BODY)
        card_row(c, 31, self._own_hand(), self.cursor)
        c.footer(_("▲▼ choose · OK lock"))

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
        for seat, name in enumerate(p["players"]):
            y = 14 + seat * 12
            if seat == lead:
                lead_marker(c, 0, y + 3)
            c.text_fit(5, y, name, 62, d.BODY)
            c.right(80, y - 1, str(last["cards"][seat]), d.TITLE)
            c.right(d.WIDTH - 1, y, d.signed(last["points"][seat]), d.STRONG)

    def _draw_round_end(self, c: Canvas, p: dict) -> None:
        token = p["rounds"][-1]["token"]
        result_screen(c, _("Round {r} over", r=len(p["rounds"])), "",
                      _("Token for {name}", name=p["players"][token]), p["players"], p["tokens"], token)

    def _draw_match_end(self, c: Canvas, p: dict) -> None:
        winner = p["winner"][0]
        result_screen(c, _("Match over"), _("OK: menu"), _("{name} wins!", name=p["players"][winner]),
                      p["players"], p["tokens"], winner)


def _move(cursor: int, name: str, size: int) -> int:
    if size == 0:
        return 0
    return (cursor + (1 if name == "up" else -1)) % size


def _order(lead: int) -> list[int]:
    return [(lead + k) % SEATS for k in range(SEATS)]


card_row = d.card_row
