"""Diabolo on the box: scoring colours, with the doubles as secret decisions.

Screens (``self.mode``); a colour's scoring is a draft kept in the controller
(colour, heaven/hell, hand sums) and re-joined after a menu or a phone entry:

``table``     the round, every seat at once, two a row (:mod:`.seat_grid`):
              each seat's total, a boxed "D" at the dealer, a triangle at
              the seat whose turn it is to place a card (the seat after the
              dealer until phones track the rows), "×2" while a seat still
              holds its double; the header lists the colours scored this
              round.  OK → score a colour.
``color``     which colour: the game's colours not yet scored this round
              (then usual names, up to five in all).
``sums``      the row's heaven and hell sums (0..15, wrapping), one field each,
              starting from the row tracked on the phones if any; the verdict
              (positive, negative, equal) is shown as they change.
``pass``      positive colour: the doubles, collected like a Third Man bid,
              from the seat after the dealer, only seats still holding their
              double: "<name> ✓ … Pass the box to <next>", names only.  OK →
``pick``      that seat's private choice, "Keep" or "Play ×2"; the cursor
              always starts on Keep.  OK locks it (a secret ``double`` entry).
``hands``     every seat's hand sum in the colour (±5 then ±1, from 0); OK on
              the last seat scores the colour (the engine reads the locked
              decisions: nothing about them is drawn before that).
``scored``    the colour's result and who played a double (REVEAL_S or a
              button), then ``round_end`` after a round's fifth colour.
``game_end``  the winners; OK or BACK opens the menu.

Each screen ends with a hint line saying what OK and BACK do; the undo
prompt names a double decision by its seat only.  Three text rows fit
between the header and the hint line: the table and the results show the
seats two a row (five seats in three rows); the colour list and the hand
sums scroll with their cursor, which stays on the first two rows (a
highlight on the third would need the row the hint line's ascenders take),
and a small triangle at the right end of the first or last row says that
more rows are above or below.

BACK steps back a field; on the first ``pass`` screen it returns to the sums
until a decision is locked, then to the table (OK resumes).  Presses per
colour: colour moves + OK, heaven moves + OK, hell moves + OK, 2 per double
holder (+1 to play it), and per seat its hand sum (coarse moves + OK + fine
moves + OK).
"""

from __future__ import annotations

from companion.colours import USUAL as DEFAULT_COLOURS, colour_id, colour_label
from companion.i18n import N_, _

from .. import draw as d
from ..draw import Canvas
from .base import (REVEAL_S, Controller, UndoStep, center_named, hint_line, legend_header, pass_screen,
                   short_name)
from .seat_grid import CELLS, distinct_names, seat_grid
from .number_entry import Stepper

COLOURS = 5
SIDE_MAX = 15                 # three 5s
HAND_MAX = 70
ROWS = d.ROWS_ABOVE_HINT      # list rows above the hint line (colours, hand sums)


def _dealer_choices(players):
    return [(seat, name) for seat, name in enumerate(players)]


class DiaboloController(Controller):
    game_id = "diabolo"
    PRIVATE_MODES = ("pass", "pick")        # a secret entry: off the web mirror
    OPTIONS = [{"key": "first_dealer", "label": N_("First dealer"), "choices": _dealer_choices,
                "default": lambda players: 0}]

    def __init__(self, app):
        super().__init__(app)
        self.mode = "table"
        self.cursor = 0
        self.result: dict | None = None
        self.top = 0                                # table and results: the first seat row shown
        self._clear_draft()

    def _clear_draft(self) -> None:
        self.color: str | None = None
        self.row = [0, 0]                           # the row's heaven and hell sums
        self.row_done = False                       # both entered
        self.field: Stepper | None = None
        self.side = 0                               # sums: 0 heaven, 1 hell
        self.hands: list[int] = []
        self.seat: int | None = None                # pass/pick/hands: the seat

    # -- following the state ---------------------------------------------------
    def sync(self, public, change) -> None:
        previous, self.public = self.public, public
        self.top = 0
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        scored = change is not None and change.kind == "action" and change.action_type == "score"
        if previous and (previous.get("scored") != public["scored"] or previous.get("round") != public["round"]):
            if scored:
                self.result = self._result(previous, public)
            self._clear_draft()
        if scored:
            self.mode, self.private = "scored", False
            self.app.set_timer("diabolo", REVEAL_S, self._after_result)
            self.app.chirp(1)
            return
        self._derive()

    def _result(self, before: dict, after: dict) -> dict:
        """What the score just entered did: the colour, the points, the doubles
        spent (known while the round goes on)."""
        if after["round"] == before["round"]:
            color = after["scored"][-1]
        else:                                         # the round's last colour: the one not scored before
            left = [c for c in self._game_colors() if c not in before["scored"]]
            color = left[0] if len(left) == 1 else (self.color or "")
        delta = [a - b for a, b in zip(after["scores"], before["scores"])]
        doubled = []
        if after["round"] == before["round"]:
            doubled = [s for s, (was, now) in enumerate(zip(before["doubles_left"], after["doubles_left"])) if was and not now]
        return {"color": color, "delta": delta, "doubled": doubled,
                "round_over": after["round"] != before["round"] or after["finished"], "round": before["round"]}

    def _after_result(self) -> None:
        self.app.cancel_timer("diabolo")
        self.top = 0
        if self.mode == "scored" and self.result and self.result["round_over"] and not self.public["finished"]:
            self.mode = "round_end"
            self.app.set_timer("diabolo", REVEAL_S, self._after_result)
            return
        self.mode = "table"
        self._derive()

    def _derive(self) -> None:
        p = self.public
        self.private = False
        if p["finished"]:
            self.mode = "game_end"
            return
        decided = p["decided"]
        if decided is not None and decided["color"] != self.color:
            self._clear_draft()                      # a phone started this colour's doubles
            self._start_colour(decided["color"])
        if self.mode in ("scored", "round_end", "table", "game_end"):
            self.mode = "table"
            return
        self._advance()

    def _advance(self) -> None:
        """The next step of the colour's scoring, from the draft and the public state."""
        self.private = False
        if self.color is None:
            self.mode, self.cursor = "color", 0
        elif not self.row_done:
            self._open_sums(0)
        elif self._next_decider() is not None:
            self.mode, self.seat = "pass", self._next_decider()
        elif self.mode != "hands":
            self._open_hand(0)

    def _order(self) -> list[int]:
        n = len(self.public["players"])
        return [(self.public["dealer"] + 1 + k) % n for k in range(n)]

    def _decided(self) -> list[int]:
        decided = self.public["decided"]
        return decided["seats"] if decided and decided["color"] == self.color else []

    def _next_decider(self) -> int | None:
        """The next seat to decide on its double: positive colour, double still held."""
        if not self.row_done or self.row[0] <= self.row[1]:
            return None
        done = set(self._decided())
        return next((s for s in self._order() if self.public["doubles_left"][s] and s not in done), None)

    def _open_sums(self, side: int) -> None:
        self.mode, self.side = "sums", side
        self.field = Stepper(self.row[side], 0, SIDE_MAX, coarse=None, wrap=True)

    def _open_hand(self, seat: int) -> None:
        self.mode, self.seat = "hands", seat
        n = len(self.public["players"])
        self.hands = (self.hands + [0] * n)[:n]
        self.field = Stepper(self.hands[seat], 0, HAND_MAX)

    def _board(self, name: str, default):
        """A public fact of the board: the rows placed, whose turn it is to
        place, the game's colours (extra keys of Diabolo's public view)."""
        value = self.public.get(name)
        return default if value is None else value

    def _start_colour(self, color: str) -> None:
        """Begin a colour's draft; a row tracked on the phones (``place``)
        gives the heaven and hell sums to start from (the engine checks them)."""
        self.color, self.row, self.row_done = color, [0, 0], False
        rows = self._board("rows", ())
        if rows:
            row = next((r for r in rows if r["color"] == color), None)
            self.row = [sum(row["heaven"]), sum(row["hell"])] if row else [0, 0]

    def _game_colors(self) -> list[str]:
        """The game's colours so far, in order of first use."""
        used = list(self._board("colors", ()))
        return used + [c for c in self.public["scored"] if c not in used]

    def _colors(self) -> list[str]:
        """Colours to offer: the game's not yet scored this round, then usual names."""
        used = self._game_colors()
        # A usual colour is stored as its id ("red"), shown in the box's
        # language; one the game already named in any language ("rouge" from
        # a French phone) is not offered again under its id.
        named = {colour_id(c) or c for c in used}
        names = used + [c for c in DEFAULT_COLOURS if c not in named]
        return [c for c in names[:COLOURS] if c not in self.public["scored"]]

    def leave_private(self) -> None:
        if self.mode == "pick":
            self.mode, self.private = "pass", False

    def locked_seats(self, public) -> set[int]:
        return set(public["decided"]["seats"]) if public.get("decided") else set()

    # -- buttons ----------------------------------------------------------------
    def key(self, name: str) -> bool:
        n = len(self.public["players"])
        if self.mode in ("round_end", "game_end") and name in ("up", "down") or (
                self.mode == "table" and name in ("up", "down") and n > CELLS):
            # Every seat fits the grid (two a row): UP/DOWN scroll only past
            # CELLS seats; on a result they never dismiss it, and they keep
            # it up for another REVEAL_S.
            if n > CELLS:
                self.top = max(0, min(self.top + (1 if name == "down" else -1), n - CELLS))
            if self.mode == "round_end":
                self.app.set_timer("diabolo", REVEAL_S, self._after_result)
            return True
        if self.mode in ("scored", "round_end"):
            self._after_result()
            return name != "back"          # BACK: on, to the menu
        if self.mode == "game_end":
            if name == "ok":
                self.app.open_menu()
                return True
            return False
        return getattr(self, f"_key_{self.mode}")(name)

    def _key_table(self, name: str) -> bool:
        if name != "ok":
            return False
        self._advance()                   # a new colour, or back into the draft where it was left
        return True

    def _key_color(self, name: str) -> bool:
        colors = self._colors()
        if name in ("up", "down"):
            self.cursor = (self.cursor + (1 if name == "down" else -1)) % len(colors)
        elif name == "ok":
            self._start_colour(colors[self.cursor])
            self._advance()
        elif name == "back":
            self.color, self.mode = None, "table"
        return True

    def _key_sums(self, name: str) -> bool:
        if name in ("up", "down"):
            self.field.move(name)
        elif name == "ok":
            self.row[self.side] = self.field.value
            if self.side == 0:
                self._open_sums(1)
            else:
                self.row_done = True
                self._advance()
        elif name == "back":
            if self.side == 1:
                self.row[1] = self.field.value
                self._open_sums(0)
            elif not self._decided():
                self.color, self.mode = None, "color"
            else:
                self.mode = "table"
        return True

    def _key_pass(self, name: str) -> bool:
        if name == "ok":
            self.mode, self.private, self.cursor = "pick", True, 0     # the cursor always starts on Keep
        elif name == "back":
            if self._decided():
                self.mode = "table"                  # the draft stays: OK resumes
            else:
                self.row_done = False
                self._open_sums(1)
        return True

    def _key_pick(self, name: str) -> bool:
        if name in ("up", "down"):
            self.cursor = 1 - self.cursor
        elif name == "ok":
            play, seat = self.cursor == 1, self.seat
            self.mode, self.private, self.cursor = "pass", False, 0    # the pick leaves the screen first
            self.app.submit({"type": "double", "seat": seat, "color": self.color, "play": play})
        elif name == "back":
            self.mode, self.private, self.cursor = "pass", False, 0
        return True

    def _key_hands(self, name: str) -> bool:
        if name in ("up", "down"):
            self.field.move(name)
        elif name == "ok":
            if not self.field.ok():
                return True
            self.hands[self.seat] = self.field.value
            if self.seat + 1 < len(self.public["players"]):
                self._open_hand(self.seat + 1)
            else:
                self.app.submit({"type": "score", "color": self.color, "hands": list(self.hands),
                                 "heaven": self.row[0], "hell": self.row[1]})
        elif name == "back" and not self.field.back():
            if self.seat > 0:
                self._open_hand(self.seat - 1)
                self.field.fine = True
            else:
                self.mode = "table"
        return True

    # -- screens ---------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        getattr(self, f"_draw_{self.mode}")(c, p)

    def _hand_rows(self, c: Canvas, p: dict, right_of, cursor: int) -> None:
        """The hand sums: one seat a row on the grid's pitch, the seat being
        entered highlighted, ROWS at most, scrolled to keep it in sight; a
        ▲/▼ at the right end of the first/last row says more seats are there.
        The highlight is never on the third row: its bar would need the row
        the hint line's ascenders take (on the last seat, the third row is empty)."""
        n = len(p["players"])
        top = max(0, cursor - 1)
        bottom = min(n, top + ROWS)
        names = distinct_names(p["players"], 80, d.BODY)
        for seat in range(top, bottom):
            icon = None
            if seat == top and top > 0:
                icon = "up"
            elif seat == bottom - 1 and bottom < n:
                icon = "down"
            c.row(d.ROW_Y + (seat - top) * d.PITCH, names[seat], seat == cursor, right=right_of(seat),
                  font=d.STRONG if seat == cursor else d.BODY, icon=icon)

    def _draw_table(self, c: Canvas, p: dict) -> None:
        n = len(p["players"])
        title = _("Round {r}/{n}", r=p["round"], n=n)
        room = d.WIDTH - d.text_width(title, d.SMALL) - 6
        scored = ""
        for size in (3, 2, 1):                       # the colours scored, as short as needed to fit
            scored = "\u2713 " + " ".join(col[:size] for col in p["scored"])
            if d.text_width(scored, d.SMALL) <= room:
                break
        if p["scored"]:
            c.header(title, scored)
        else:
            legend_header(c, title, _("places"))     # the triangle: whose turn it is to place a card
        # Every seat at once, two a row: ▶ at whose turn it is to place a
        # card, a boxed D at the dealer, "×2" before the score of a seat
        # that still holds its double.
        turn = self._board("turn", self._order()[0])
        marks = {seat: "\u25b6" for seat in (turn,)}
        marks[p["dealer"]] = ("box", _("D"))
        right = [("\u00d72 " if p["doubles_left"][s] else "") + d.number(v) for s, v in enumerate(p["scores"])]
        seat_grid(c, p["players"], right, marks=marks, right_font=d.BODY)
        hint_line(c, _("OK: score · BACK: menu"))

    def _draw_color(self, c: Canvas, p: dict) -> None:
        colors = self._colors()
        c.header(_("Which colour?"), f"{len(p['scored'])}/5 \u2713")      # ✓: scored this round
        first = max(0, self.cursor - 1)       # the highlight on the first two rows (see _hand_rows)
        shown = colors[first:first + ROWS]
        for i, color in enumerate(shown):
            icon = None
            if i == 0 and first > 0:
                icon = "up"
            elif i == len(shown) - 1 and first + ROWS < len(colors):
                icon = "down"
            c.row(d.ROW_Y + i * d.PITCH, colour_label(color), first + i == self.cursor, icon=icon)
        hint_line(c, _("OK: pick · BACK: table"))

    def _verdict(self, heaven: int, hell: int) -> str:
        if heaven > hell:
            return _("positive: doubles OK")
        if self._decided():
            # Secret-blind rule: with decisions entered the colour must score
            # positive, whatever they say (the score would be refused).
            return _("not positive: undo first")
        if hell > heaven:
            return _("negative")
        return _("equal: nobody scores")

    def _draw_sums(self, c: Canvas, p: dict) -> None:
        heaven = self.field.value if self.side == 0 else self.row[0]
        hell = self.field.value if self.side == 1 else self.row[1]
        c.header(_("{color}: the row", color=colour_label(self.color)), self.field.label())
        c.row(d.ROW_Y, _("Heaven"), self.side == 0, right=str(heaven), font=d.STRONG)
        c.row(d.ROW_Y + d.PITCH, _("Hell"), self.side == 1, right=str(hell), font=d.STRONG)
        if self.side == 1:
            c.center(d.ROW_Y + 2 * d.PITCH, self._verdict(heaven, hell), d.SMALL)
        hint_line(c, _("OK: next · BACK: back"))

    def _draw_pass(self, c: Canvas, p: dict) -> None:
        done = [p["players"][s] for s in self._order() if s in self._decided()]
        holders = [s for s in self._order() if p["doubles_left"][s]]
        # Every seat that has decided is named (abbreviated if need be, never dropped).
        pass_screen(c, _("{color}: doubles", color=colour_label(self.color)), f"{len(done)}/{len(holders)}",
                    done, p["players"][self.seat], _("OK: ready · BACK: back"), others=p["players"])

    def _draw_pick(self, c: Canvas, p: dict) -> None:
        c.private = True
        name = p["players"][self.seat]
        title = _("{name}, your double", name="")
        c.header(_("{name}, your double", name=short_name(
            name, p["players"], d.WIDTH - 2 * d.MARGIN - d.text_width(title, d.SMALL), d.SMALL)))
        # The choices on the first two rows (a highlight there holds its row
        # whole), the reminder under them.
        c.row(d.ROW_Y, _("Keep it"), self.cursor == 0, font=d.STRONG)
        c.row(d.ROW_Y + d.PITCH, _("Play it \u00d72"), self.cursor == 1, font=d.STRONG)
        center_named(c, d.ROW_Y + 2 * d.PITCH, lambda n: _("on {color}? Only {name} looks!", color=colour_label(self.color), name=n),
                     name, (d.SMALL,), others=p["players"])
        hint_line(c, _("OK: lock · BACK: pass"))

    def _draw_hands(self, c: Canvas, p: dict) -> None:
        c.header(_("{color}: hand sums", color=colour_label(self.color)), self.field.label())

        def value(s: int) -> str:
            if s == self.seat:
                return str(self.field.value)
            return str(self.hands[s]) if s < self.seat else ""
        self._hand_rows(c, p, value, self.seat)
        hint_line(c, _("OK: next · BACK: back"))

    def _draw_scored(self, c: Canvas, p: dict) -> None:
        r = self.result
        c.header(_("{color} scored", color=colour_label(r["color"])), _("round {r}", r=r["round"]))
        who = [s for s, v in enumerate(r["delta"]) if v or s in r["doubled"]]      # a double played for 0 too
        right = [("\u00d72 " if s in r["doubled"] else "") + d.signed(v) for s, v in enumerate(r["delta"])]
        headline = " \u00b7 ".join(f"{p['players'][s]} {right[s]}" for s in who) or _("Nobody scores")
        font = d.largest_fitting(headline, d.WIDTH - 2 * d.MARGIN, (d.BIG, d.TITLE, d.STRONG))
        if d.text_width(headline, font) <= d.WIDTH - 2 * d.MARGIN:
            c.center(d.ROW_Y + 6, headline, font)          # one line says it all, large
        else:
            # Who scored, two a row; "×2" before the points of a double played.
            seat_grid(c, p["players"], right, seats=who)
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_round_end(self, c: Canvas, p: dict) -> None:
        c.header(_("Round {r} over", r=self.result["round"]), _("total"))
        seat_grid(c, p["players"], [d.number(v) for v in p["scores"]])
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_game_end(self, c: Canvas, p: dict) -> None:
        winners = set(p["winner"])
        c.header(_("Game over"), _("\u2605 wins"))
        seat_grid(c, p["players"], [("\u2605 " if s in winners else "") + d.number(v) for s, v in enumerate(p["scores"])])
        hint_line(c, _("OK or BACK: menu"))

    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """A card placed in a row, a colour's score, or a double decision (a
    secret: named by its seat only, "Ben's double decision")."""
    a = step.action
    kind = a.get("type")
    if kind == "double":
        return _("{name}'s double decision", name=step.name(a.get("seat")))
    if kind == "place":
        return _("{name}'s {value} in {color}", name=step.name(a.get("seat")), value=a["value"], color=colour_label(a["color"]))
    if kind == "score":
        return _("the {color} score", color=colour_label(a["color"]))
    return ""
