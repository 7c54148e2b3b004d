"""The free scoreboard on the box: pick a seat, change points/tokens, secret rounds.

Modes (``self.mode``):

``list``    one row per seat (name, tokens, score) and a last row "Secret
            round".  UP/DOWN move, OK on a seat → ``edit``, OK on the last
            row → the secret round.
``edit``    two fields, points then tokens, each a change starting at 0.
            UP/DOWN change the focused field; OK on points applies a
            non-zero change at once (or goes to tokens when it is 0); OK on
            tokens applies the token change.  BACK cancels.
            "+5 points" = OK, UP×5, OK; "+1 token" = OK, OK, UP, OK.
``pass``    "Pass the box to <name>" for the next seat without a number.
``pick``    that seat's number, starting at 0 whatever the others chose;
            OK locks (then ``pass`` for the next seat), BACK cancels.
``reveal``  every seat's number once all are in.
``finished`` the winners.
"""

from __future__ import annotations

from companion.i18n import _

from .. import draw as d
from ..draw import Canvas
from .base import REVEAL_S, Controller, pass_screen

ROWS = 4     # visible list rows


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
            return True
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
        n = len(p["players"])
        entered = len(p["entered"])
        c.header(_("Scoreboard"), _("{k}/{n} entered", k=entered, n=n) if entered else "")
        first = max(0, min(self.cursor - ROWS + 1, n + 1 - ROWS))
        for i in range(ROWS):
            row = first + i
            y = 14 + i * 12
            if row < n:
                tokens = p["tokens"][row]
                right = d.number(p["scores"][row])
                if tokens:
                    right = f"{tokens}\u25cf {right}"
                c.row(y, p["players"][row], row == self.cursor, height=12, right=right)
            elif row == n:
                c.row(y, _("Secret round \u25b8"), row == self.cursor, height=12)

    def _draw_edit(self, c: Canvas, p: dict) -> None:
        name = p["players"][self.seat]
        c.header(name, _("score {s}", s=d.number(p["scores"][self.seat])))
        c.row(16, _("Points"), self.field == 0, height=15, right=d.signed(self.delta[0]), font=d.TITLE)
        c.row(32, _("Tokens"), self.field == 1, height=15, right=d.signed(self.delta[1]), font=d.TITLE)
        c.footer(_("▲▼ change · OK apply"))

    def _draw_pass(self, c: Canvas, p: dict) -> None:
        done = [p["players"][s] for s in p["entered"]]
        if len(done) > 2:
            done = done[-2:]
        pass_screen(c, _("Secret round"), _("{k}/{n}", k=len(p["entered"]), n=len(p["players"])),
                    done, p["players"][self.seat])

    def _draw_pick(self, c: Canvas, p: dict) -> None:
        c.private = True
        name = p["players"][self.seat]
        c.header(_("{name}: your secret number", name=name))
        c.center(15, _("Only {name} looks!", name=name), d.BODY)
        c.center(28, d.number(self.value), d.HUGE)
        c.footer(_("▲▼ change · OK lock"))

    def _draw_reveal(self, c: Canvas, p: dict) -> None:
        c.header(_("Revealed!"))
        pairs = list(zip(p["players"], p["reveal"] or []))
        if len(pairs) <= ROWS:
            for i, (name, value) in enumerate(pairs):
                c.row(14 + i * 12, name, False, height=12, right=d.number(value), font=d.BODY)
            return
        for i, (name, value) in enumerate(pairs[:2 * ROWS]):      # five to eight seats: two columns
            x, y = (i // ROWS) * 65, 14 + (i % ROWS) * 12
            value_text = d.number(value)
            c.right(x + 62, y, value_text, d.STRONG)
            c.text_fit(x, y, name, 58 - d.text_width(value_text, d.STRONG), d.BODY)

    def _draw_finished(self, c: Canvas, p: dict) -> None:
        names = ", ".join(p["players"][s] for s in p["winner"])
        c.header(_("Game over"), _("OK: menu"))
        c.center(16, _("Winner"), d.SMALL)
        c.center(28, names, d.largest_fitting(names, d.WIDTH - 4, (d.BIG, d.TITLE, d.STRONG, d.SMALL)))
