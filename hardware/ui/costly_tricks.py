"""Costly Tricks on the box: the deal, quick trick entry, hand and match results.

Seats are the two players (0, 1) then their dummies (2 = Ann's dummy, 3 =
Ben's dummy); scores, tricks and tokens are per side (player + dummy).

Screens (``self.mode``), re-derived from the public state after a change:

``deal``       "Who has the red 0?": the four seats (three lines: the list
               scrolls, ▶ at the cursor); OK deals (that seat leads).
``trick``      the hand and the next trick's entry on one screen: both sides
               with their tokens (dots), tricks and hand points, a triangle at
               the side that leads (hollow when its dummy leads), then one
               entry line for two fields in turn: *Won by* (the cursor starts
               on the seat that leads, i.e. the last trick's winner) and
               *Points* (the header then says who won the trick).  UP/DOWN cycle the seat
               (wrapping: two presses at most), OK goes to the points, which
               start at the hand's expected value (the points still out divided
               by the tricks left) and are entered ±5 then ±1 (see
               :mod:`.number_entry`), within what the 220 check still allows.
               The 11th trick's points are forced (220 minus the others; the
               header says them): OK on *Won by* enters it at once.  BACK steps back a field; on *Won
               by* it opens the menu.
``hand_end``   the hand's token and both sides' tricks and points; any
               button (or REVEAL_S) goes on to the next deal (BACK opens the
               menu over it).
``match_end``  the winner and the last hand; OK or BACK opens the menu.

Each screen's hint line says what OK and BACK do; the undo prompt names the
deal or the trick it takes back (:func:`describe_undo`).

Presses per trick: seat moves (0-2) + OK + coarse moves + OK + fine moves
+ OK, so 3 at least and about 6 on average; the 11th trick: seat moves + OK.
A deal: seat moves (0-2) + OK.
"""

from __future__ import annotations

from companion.i18n import N_, _

from .. import draw as d
from ..draw import Canvas
from .base import REVEAL_S, Controller, UndoStep, center_named, hint_line, short_name
from .number_entry import Stepper

SEATS = 4
TRICKS = 11
TRICK_COST = 20
HAND_POINTS = TRICKS * TRICK_COST       # the 44 cards add up to 220
MAX_TRICK = 40                          # four 10s


def _hands_choices(players):
    return [(n, str(n)) for n in range(1, 6)]


def seat_label(players: list[str], seat: int) -> str:
    """A seat as the table says it: the player, or the player's dummy."""
    name = players[seat % 2]
    return name if seat < 2 else _("{name}'s dummy", name=name)


def marker(c: Canvas, x: int, y: int, hollow: bool = False, fill=d.ON) -> None:
    """The lead's triangle (4 px wide, 7 high from x, y); hollow when the
    side's dummy leads.  Recorded as a shape: nothing may cross it."""
    c.shape((x, y, x + 4, y + 7),
            lambda draw: draw.polygon([(x, y), (x, y + 6), (x + 3, y + 3)], fill=None if hollow else fill,
                                      outline=fill))


def seat_short(players: list[str], seat: int, width: int, font=d.BODY) -> str:
    """:func:`seat_label` in ``width`` pixels: the *name* gives way (abbreviated
    distinctly, "Marc-A.'s dummy"), never the word that says it is a dummy."""
    label = seat_label(players, seat)
    if d.text_width(label, font) <= width:
        return label
    name = players[seat % 2]
    room = width - d.text_width(label, font) + d.text_width(name, font)
    short = short_name(name, players, max(room, 0), font)
    return short if seat < 2 else _("{name}'s dummy", name=short)


# The grid's three rows under the header (14, 27, 40): the result screens.
ROWS = [d.ROW_Y + i * d.PITCH for i in range(d.ROWS_ABOVE_HINT)]
# A screen with a cursor: lines on the 12-row pitch (14, 26, 38).  A bar on
# the grid's third row would end on row 52, which a hint with an "i" or an
# accent needs; so the trick entry's bar sits on row 39 (rows 38-51) under
# two lines that are never highlighted, and the deal's list marks its cursor
# with ▶ instead of a bar.
LINES = [d.ROW_Y + i * d.LINE for i in range(d.ROWS_ABOVE_HINT)]
ENTRY_Y = d.HINT_Y - d.LINE       # 39: its bar holds rows 38-51, over the hint's band


def cursor_line(c: Canvas, y: int, text: str, selected: bool, icon: str | None = None) -> None:
    """A list line on the 12-row pitch: ▶ and bold at the cursor, an optional
    icon (a scroll mark) at the right end."""
    if selected:
        c.icon_in_line(d.LEFT, y, "play")
    end = d.RIGHT + 1
    if icon:
        w, _h = d.icon_size(icon)
        c.icon_in_line(end - w, y, icon)
        end -= w + 3
    x = d.LEFT + d.icon_width("play") + 2
    c.text(x, y, d.fit(text, d.STRONG if selected else d.BODY, end - x), d.STRONG if selected else d.BODY)


class CostlyTricksController(Controller):
    game_id = "costly-tricks"
    OPTIONS = [
        {"key": "hands_to_win", "label": N_("Hands to win"), "choices": _hands_choices,
         "default": lambda players: 3},
    ]

    def __init__(self, app):
        super().__init__(app)
        self.mode = "deal"
        self.cursor = 0              # deal: the seat with the red 0; trick: the winner
        self.field = 0               # trick: 0 = won by, 1 = points
        self.points: Stepper | None = None

    # -- following the state ---------------------------------------------------
    def sync(self, public, change) -> None:
        previous, self.public = self.public, public
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        ended = change is not None and change.kind == "action" and change.action_type == "trick" \
            and len(public["hands"]) > len(previous.get("hands", public["hands"]))
        if ended and not public["finished"]:
            self.mode = "hand_end"
            self.app.set_timer("costly-tricks", REVEAL_S, self._derive)
            self.app.chirp(2)
            return
        self._derive()

    def _derive(self) -> None:
        self.app.cancel_timer("costly-tricks")
        p = self.public
        if p["finished"]:
            self.mode = "match_end"
        elif p["lead"] is None:
            if self.mode != "deal":
                self.cursor = 0
            self.mode = "deal"
        else:
            self.mode = "trick"
            self._new_trick()

    def _new_trick(self) -> None:
        """The entry of the next trick: the lead as the likely winner, the expected points."""
        p = self.public
        self.field, self.cursor = 0, p["lead"]
        played = sum(p["tricks"])
        left = TRICKS - played                          # this trick included
        taken = sum(p["scores"]) + TRICK_COST * played  # card points in the tricks so far
        rest = HAND_POINTS - taken
        lo, hi = max(0, rest - MAX_TRICK * (left - 1)), min(MAX_TRICK, rest)
        self.points = Stepper(round(rest / left) if left else 0, lo, hi)

    def _last_trick(self) -> bool:
        return sum(self.public["tricks"]) == TRICKS - 1

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        if self.mode == "hand_end":
            self._derive()                # any button: on to the deal (BACK: and the menu)
            return name != "back"
        if self.mode == "match_end":
            if name == "ok":
                self.app.open_menu()
                return True
            return False
        if self.mode == "deal":
            if name in ("up", "down"):
                self.cursor = (self.cursor + (1 if name == "down" else -1)) % SEATS
                return True
            if name == "ok":
                self.app.submit({"type": "deal", "lead": self.cursor})
                return True
            return False
        # the trick entry
        if self.field == 0:
            if name in ("up", "down"):
                self.cursor = (self.cursor + (1 if name == "down" else -1)) % SEATS
                return True
            if name == "ok":
                if self._last_trick():
                    self._enter()
                else:
                    self.field = 1
                return True
            return False
        if name in ("up", "down"):
            self.points.move(name)
        elif name == "ok":
            if self.points.ok():
                self._enter()
        elif name == "back" and not self.points.back():
            self.field = 0
        return True

    def _enter(self) -> None:
        if not self.app.submit({"type": "trick", "winner": self.cursor, "points": self.points.value}):
            self.field = 0            # refused (shown): start the entry again from the seat

    # -- screens ---------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        getattr(self, f"_draw_{self.mode}")(c, p)

    def _draw_sides(self, c: Canvas, p: dict, y: int, lead: int | None, scores, tricks, pitch: int = d.PITCH) -> None:
        """Both sides on two grid rows: triangle at the lead, name, tokens,
        tricks, points (right-aligned, so that they line up)."""
        score_x = d.WIDTH - d.MARGIN + 1
        score_w = max(d.text_width(d.signed(v), d.STRONG) for v in scores)
        tricks_x = score_x - max(score_w, d.text_width("+00", d.STRONG)) - 4
        for s in (0, 1):
            row = y + s * pitch
            if lead is not None and lead % 2 == s:
                marker(c, d.MARGIN, row + 3, hollow=lead >= 2)
            tricks_text = _("{n} tr.", n=tricks[s])
            tricks_w = c.right(tricks_x, row, tricks_text, d.BODY)
            c.right(score_x, row, d.signed(scores[s]), d.STRONG)
            tokens = p["tokens"][s]
            dots = (min(tokens, 3) * 5 if tokens <= 3 else d.text_width(str(tokens), d.SMALL) + 5) if tokens else 0
            room = tricks_x - tricks_w - 4 - 7 - (dots + 3 if dots else 0)
            width = c.text(7, row, short_name(p["players"][s], p["players"], room), d.BODY)
            if tokens:
                c.dots(7 + width + 2, row + 4, tokens, limit=3)

    def _draw_trick(self, c: Canvas, p: dict) -> None:
        played = sum(p["tricks"])
        players = p["players"]
        of = f"{played + 1}/{TRICKS}"
        room = d.WIDTH - 2 * d.MARGIN
        if self._last_trick():
            # The 11th trick's points are the rest: the header says them.
            c.header(_("Last trick: {n} points", n=self.points.value))
        elif self.field == 1:
            # Entering the points: the header keeps who won the trick.
            width = room - d.text_width(of, d.SMALL) - 2
            c.header(_("Won by {seat}", seat=seat_short(players, self.cursor, width - d.text_width(
                _("Won by {seat}", seat=""), d.SMALL), d.SMALL)), of)
        else:
            c.header(_("Hand {h} · trick {t}/{n}", h=len(p["hands"]) + 1, t=played + 1, n=TRICKS))
        self._draw_sides(c, p, LINES[0], p["lead"], p["scores"], p["tricks"], pitch=d.LINE)
        if self.field == 0:
            label = _("Won by")
            seat = seat_short(players, self.cursor, room - 6 - d.text_width(label, d.BODY))
            c.row(ENTRY_Y, label, True, right=seat)
        else:
            c.row(ENTRY_Y, _("Points {step}", step=self.points.label()), True, right=str(self.points.value))
        if self._last_trick():
            hint_line(c, _("OK: enter · BACK: menu"))
        else:
            hint_line(c, _("OK: points · BACK: menu") if self.field == 0 else _("OK: enter · BACK: back"))

    def _draw_deal(self, c: Canvas, p: dict) -> None:
        c.header(_("Who has the red 0?"))
        # Four seats, three rows: the list scrolls, a ▲/▼ says a seat is hidden.
        first = 0 if self.cursor < len(LINES) else SEATS - len(LINES)
        for i, y in enumerate(LINES):
            seat = first + i
            more = (i == 0 and first > 0) or (i == len(LINES) - 1 and seat < SEATS - 1)
            font = d.STRONG if seat == self.cursor else d.BODY
            cursor_line(c, y, seat_short(p["players"], seat, d.RIGHT - d.LEFT - 18, font), seat == self.cursor,
                        icon=("up" if i == 0 else "down") if more else None)
        hint_line(c, _("OK: deal · BACK: menu"))

    def _draw_result(self, c: Canvas, p: dict, header: str, right: str, headline, seat: int | None) -> None:
        """``headline``: a function of the seat's name ("Token for {name}")."""
        hand = p["hands"][-1]
        c.header(header, right)
        center_named(c, ROWS[0], headline, p["players"][seat] if seat is not None else "", fonts=(d.STRONG,),
                     others=p["players"])
        self._draw_sides(c, p, ROWS[1], None, hand["points"], hand["tricks"])

    def _draw_hand_end(self, c: Canvas, p: dict) -> None:
        token = p["hands"][-1]["token"]
        headline = (lambda n: _("No token: 0 to 0")) if token is None else (lambda n: _("Token for {name}", name=n))
        self._draw_result(c, p, _("Hand {h} over", h=len(p["hands"])), "", headline, token)
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_match_end(self, c: Canvas, p: dict) -> None:
        self._draw_result(c, p, _("Match over"), _("hand {h}", h=len(p["hands"])),
                          lambda n: _("{name} wins!", name=n), p["winner"][0])
        hint_line(c, _("OK or BACK: menu"))

    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """A deal ("the deal: Ben's dummy leads") or a trick ("the trick won by
    Ann (25)"); Costly Tricks has no secret entry."""
    a, players = step.action, step.before.get("players") or []
    if a.get("type") == "deal":
        return _("the deal: {seat} leads", seat=seat_label(players, a["lead"]))
    if a.get("type") == "trick":
        winner = a.get("winner")
        if winner is None and step.after.get("lead") is not None:
            winner = step.after["lead"]             # entered as cards: the winner leads next
        if winner is None:
            return _("the last trick of hand {h}", h=len(step.before.get("hands") or []) + 1)
        if a.get("points") is None:
            return _("the trick won by {seat}", seat=seat_label(players, winner))
        return _("the trick won by {seat} ({n})", seat=seat_label(players, winner), n=a["points"])
    return ""
