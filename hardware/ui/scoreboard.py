"""The free scoreboard on the box: pick a seat, change points/tokens, secret rounds.

Modes (``self.mode``):

``list``    the seats two a row (name, tokens, score; :mod:`.seat_grid`) and
            a last row "Secret round", a ▶ at the cursor.  UP/DOWN move, OK on a seat → ``edit``, OK on the last
            row → the secret round.
``edit``    two fields, points then tokens, each a change starting at 0.
            UP/DOWN change the focused field; OK on points applies a
            non-zero change at once (or goes to tokens when it is 0); OK on
            tokens applies the token change.  BACK cancels.
            "+5 points" = OK, UP×5, OK; "+1 token" = OK, OK, UP, OK.
``pass``    "Pass the box to <name>" for the next seat without a number.
``pick``    that seat's number, starting at 0 whatever the others chose;
            OK locks (then ``pass`` for the next seat), BACK cancels.
``reveal``  every seat's number once all are in, two a row.
``finished`` the winners.
"""

from __future__ import annotations

from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .base import HINT_Y, REVEAL_S, Controller, UndoStep, center_named, hint_line, pass_screen, short_name
from .seat_grid import CELLS, MARK_W, distinct_names, seat_grid

ROWS = d.ROWS_ABOVE_HINT     # visible list rows (two seats each)


class ScoreboardController(Controller):
    game_id = "scoreboard"
    PRIVATE_MODES = ("pass", "pick")        # a secret entry: off the web mirror

    def __init__(self, app):
        super().__init__(app)
        self.mode = "list"
        self.cursor = 0          # list row, or the picked number
        self.seat: int | None = None
        self.field = 0           # edit: 0 = points, 1 = tokens
        self.delta = [0, 0]
        self.value = 0

    def sync(self, public, change) -> None:
        self.public = public
        if change is not None and change.kind not in ("action", "undo", "new_game", "resume"):
            return
        if change is not None and change.action_type == "secret" and not public["entered"] and public["reveal"]:
            self.mode, self.private = "reveal", False
            self.app.set_timer("scoreboard", REVEAL_S, self._derive)
            self.app.chirp(1)
            return
        self._derive()

    def _derive(self) -> None:
        self.app.cancel_timer("scoreboard")
        p = self.public
        self.private = False
        if p["finished"]:
            self.mode = "finished"
        elif self.mode in ("pass", "pick"):
            seat = self._next_seat()
            if seat is None or (self.mode == "pick" and seat != self.seat):
                self.mode = "pass" if seat is not None else "list"
            if self.mode == "pick":
                self.private = True
            self.seat = seat
        elif self.mode in ("reveal", "finished"):
            self.mode = "list"
        self.cursor = min(self.cursor, len(p["players"])) if self.mode == "list" else self.cursor

    def _next_seat(self) -> int | None:
        entered = set(self.public["entered"])
        return next((s for s in range(len(self.public["players"])) if s not in entered), None)

    def leave_private(self) -> None:
        if self.mode == "pick":
            self.mode, self.private = "pass", False

    def locked_seats(self, public) -> set[int]:
        return set(public.get("entered") or ())

    # -- buttons --------------------------------------------------------------
    def key(self, name: str) -> bool:
        p = self.public
        n = len(p["players"])
        if self.mode == "reveal":
            self._derive()
            return name != "back"          # BACK: on, to the menu
        if self.mode == "finished":
            if name == "ok":
                self.app.open_menu()
                return True
            return False
        if self.mode == "list":
            if name in ("up", "down"):
                self.cursor = (self.cursor + (-1 if name == "up" else 1)) % (n + 1)
            elif name == "ok":
                if self.cursor < n:
                    self.mode, self.seat, self.field, self.delta = "edit", self.cursor, 0, [0, 0]
                else:
                    self.seat = self._next_seat()
                    self.mode = "pass"
            else:
                return False
            return True
        if self.mode == "edit":
            if name in ("up", "down"):
                self.delta[self.field] += 1 if name == "up" else -1
            elif name == "ok":
                if self.field == 0 and self.delta[0] == 0:
                    self.field = 1
                    return True
                if self.field == 0:
                    action = {"type": "add", "seat": self.seat, "points": self.delta[0]}
                else:
                    action = {"type": "token", "seat": self.seat, "delta": self.delta[1]} if self.delta[1] else None
                self.mode = "list"
                if action is not None:
                    self.app.submit(action)
            elif name == "back":
                self.mode = "list"
            return True
        if self.mode == "pass":
            if name == "ok":
                self.mode, self.private, self.value = "pick", True, 0
                return True
            if name == "back":
                self.mode = "list"
                return True
            return False
        if self.mode == "pick":
            if name in ("up", "down"):
                self.value += 1 if name == "up" else -1
            elif name == "ok":
                value, self.value = self.value, 0
                self.mode, self.private = "pass", False
                self.app.submit({"type": "secret", "seat": self.seat, "value": value})
            elif name == "back":
                self.mode, self.private, self.value = "pass", False, 0
            return True
        return False

    # -- screens --------------------------------------------------------------
    def draw(self, c: Canvas, p: dict) -> None:
        getattr(self, f"_draw_{self.mode}")(c, p)

    def _draw_list(self, c: Canvas, p: dict) -> None:
        # The seats two a row (every score at once up to six seats), then the
        # "Secret round" row; a ▶ marks the cursor (no bar: any of the three
        # rows may hold it).  Past three rows the window follows the cursor,
        # ▲/▼ in the header saying more rows are above or below.
        n = len(p["players"])
        grid_rows = (n + 1) // 2
        rows = grid_rows + 1
        at = self.cursor // 2 if self.cursor < n else grid_rows
        first = max(0, min(at - 1, rows - ROWS))
        more = ("\u25b2" if first > 0 else "") + ("\u25bc" if first + ROWS < rows else "")
        entered = len(p["entered"])
        title, room = _("Scoreboard"), d.WIDTH - 2 * d.MARGIN - 3
        # The header's right end: the secret numbers entered ("1/4 ✓") and
        # the scroll marks, as much as fits beside the whole title (the
        # marks first; the pass screen counts the entries too).
        right = ""
        for candidate in (f"{entered}/{n} \u2713 {more}", f"{entered}/{n} {more}", more):
            candidate = candidate.strip() if entered else more
            if d.text_width(title, d.SMALL) + d.text_width(candidate, d.SMALL) <= room:
                right = candidate
                break
        c.header(title, right)
        seats = [s for s in range(n) if first <= s // 2 < first + ROWS]
        texts = []
        for seat in range(n):
            tokens = p["tokens"][seat]
            texts.append((f"{tokens}\u25cf " if tokens else "") + d.number(p["scores"][seat]))
        seat_grid(c, p["players"], texts, seats=seats, y=d.ROW_Y,
                  marks={self.cursor: "\u25b6"}, right_font=d.BODY)    # (always a mark column: the secret row lines up)
        if first <= grid_rows < first + ROWS:
            y = d.ROW_Y + (grid_rows - first) * d.PITCH
            if self.cursor == n:
                c.icon_in_line(1, y, "play")
            c.text(2 + MARK_W, y, _("Secret round \u25b8"), d.BODY)
        hint_line(c, _("OK: change · BACK: menu") if self.cursor < n else _("OK: start · BACK: menu"))

    def _draw_edit(self, c: Canvas, p: dict) -> None:
        right = _("score {s}", s=d.number(p["scores"][self.seat]))
        room = d.WIDTH - 2 * d.MARGIN - d.text_width(right, d.SMALL) - 3
        c.header(short_name(p["players"][self.seat], p["players"], room, d.SMALL), right)
        c.row(d.ROW_Y, _("Points"), self.field == 0, right=d.signed(self.delta[0]), font=d.STRONG)
        c.row(d.ROW_Y + d.PITCH, _("Tokens"), self.field == 1, right=d.signed(self.delta[1]), font=d.STRONG)
        hint_line(c, _("OK: apply · BACK: cancel"))

    def _draw_pass(self, c: Canvas, p: dict) -> None:
        done = [p["players"][s] for s in p["entered"]]       # every seat in: abbreviated, never dropped
        pass_screen(c, _("Secret round"), _("{k}/{n}", k=len(p["entered"]), n=len(p["players"])),
                    done, p["players"][self.seat], _("OK: ready · BACK: list"), others=p["players"])

    def _draw_pick(self, c: Canvas, p: dict) -> None:
        c.private = True
        name = p["players"][self.seat]
        room = d.WIDTH - 2 * d.MARGIN - d.text_width(_("{name}: your secret number", name=""), d.SMALL)
        c.header(_("{name}: your secret number", name=short_name(name, p["players"], room, d.SMALL)))
        center_named(c, d.ROW_Y, lambda n: _("Only {name} looks!", name=n), name, (d.BODY,), others=p["players"])
        c.text(d.WIDTH // 2, HINT_Y - 3, d.number(self.value), d.HUGE, anchor="ms")   # its digits above the hint
        hint_line(c, _("OK: lock · BACK: pass"))

    def _draw_reveal(self, c: Canvas, p: dict) -> None:
        values = [d.number(v) for v in (p["reveal"] or [])]
        n = len(values)
        if n <= CELLS:
            c.header(_("Revealed!"))
            seat_grid(c, p["players"], values)
        else:
            # Seven or eight seats: four rows on the 12-px line, from the top
            # (no header: every number is the news).
            seat_grid(c, p["players"], values, y=d.MARGIN, pitch=d.LINE, cells=8)
        hint_line(c, _("OK: go on · BACK: menu"))

    def _draw_finished(self, c: Canvas, p: dict) -> None:
        c.header(_("Game over"), _("Winner") if len(p["winner"]) == 1 else _("Winners"))
        width = d.WIDTH - 2 * d.MARGIN
        if len(p["winner"]) == 1:
            center_named(c, d.ROW_Y + 2, lambda n: n, p["players"][p["winner"][0]], (d.BIG, d.TITLE, d.STRONG),
                         others=p["players"])
        else:
            names = distinct_names(p["players"], width // len(p["winner"]) - 4, d.STRONG)
            line = ", ".join(names[s] for s in p["winner"])
            c.center(d.ROW_Y + 2, line, d.largest_fitting(line, width, (d.BIG, d.TITLE, d.STRONG)))
        best = p["winner"][0]
        score = _("{score} points · {tokens} tokens", score=d.number(p["scores"][best]), tokens=p["tokens"][best])
        c.center(d.ROW_Y + 2 * d.PITCH, score, d.SMALL)
        hint_line(c, _("OK or BACK: menu"))

    def describe_undo(self, step: UndoStep) -> str:
        return describe_undo(step)


def describe_undo(step: UndoStep) -> str:
    """Points or tokens by name and amount; a secret number by its seat only."""
    a = step.action
    name = step.name(a.get("seat"))
    if a.get("type") == "secret":
        if step.after.get("reveal") != step.before.get("reveal"):
            return _("{name}'s secret number and the reveal", name=name)
        return _("{name}'s secret number", name=name)
    if a.get("type") == "add":
        return _("{name}: {points} points", name=name, points=d.signed(a["points"]))
    if a.get("type") == "token":
        return _("{name}: {delta} tokens", name=name, delta=d.signed(a["delta"]))
    return ""
