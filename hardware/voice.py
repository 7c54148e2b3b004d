"""The box's voice, if wanted: it says reveals, round ends and the winner.

Off by default; ``speak = true`` in companion.toml, or Menu → Speak, turns
it on (the setting is read at every change, so the menu's switch applies at
once).  It speaks in the box's language through Debian's ``espeak-ng``
(voice ``en`` or ``fr``) and the Pi's audio.  The buzzer still chirps for
presses; the voice is for what the whole table should hear.

Like the screens, :class:`Voice` is fed by the session's changes
(:meth:`Voice.follow`, called on the box's thread).  What a change says is
worked out by the pure :func:`utterance` (the tests check these texts in
both languages); saying it starts ``espeak-ng`` as a separate process and
never waits for it: the box's thread goes straight back to its buttons.
A new utterance cancels one still being spoken (the table has moved on;
the texts of one change are one utterance, so nothing of it is cut).
Without ``espeak-ng`` the table is told once by a notice, and the box
plays on in silence.
"""

from __future__ import annotations

import logging
import subprocess
from typing import Callable

from companion.i18n import N_, gettext, normalise

log = logging.getLogger("hardware.voice")

COMMAND = "espeak-ng"
VOICES = {"en": "en", "fr": "fr"}
NO_ESPEAK = N_("The box cannot speak: espeak-ng is not installed (sudo apt-get install espeak-ng).")


def _listing(players, values) -> str:
    return ", ".join(f"{name} {value}" for name, value in zip(players, values))


def utterance(before: dict | None, change, language: str) -> str:
    """What the box says after ``change`` (a session Change), given the
    public state ``before`` it: reveals, a round's end, the winner; "" for
    anything else (an undo, a new game, an ordinary move).  Never a secret:
    only the public state is read, after the reveal."""
    if change is None or change.kind != "action" or not before or before.get("game") != change.state.get("game"):
        return ""
    state = change.state
    players = state.get("players") or []
    said: list[str] = []

    def say(template, **params):
        said.append(gettext(template, language, **params))

    # Reveals: The Third Man's four cards, the scoreboard's secret round.
    last = state.get("last")
    if state.get("game") == "third-man" and isinstance(last, dict) and last != before.get("last"):
        say(N_("Revealed: {cards}."), cards=_listing(players, last.get("cards") or []))
        if last.get("annulled"):
            say(N_("The bid is annulled."))
    reveal = state.get("reveal")
    if reveal and reveal != before.get("reveal"):
        say(N_("Revealed: {cards}."), cards=_listing(players, reveal))

    # A round's (or hand's) end, with its scores.
    rounds, was = state.get("rounds"), before.get("rounds")
    if isinstance(rounds, list) and isinstance(was, list) and len(rounds) > len(was):
        done = rounds[-1]
        say(N_("Round {n} over."), n=len(rounds))
        say(N_("Scores: {scores}."), scores=_listing(players, done.get("scores") or []))
        if not state.get("finished") and isinstance(done.get("token"), int) and done["token"] < len(players):
            say(N_("{name} takes the token."), name=players[done["token"]])
    hands, had = state.get("hands"), before.get("hands")
    if (state.get("game") != "third-man" and isinstance(hands, list) and isinstance(had, list)
            and len(hands) > len(had)):
        say(N_("Hand {n} over."), n=len(hands))
        # The hand's own points where the game keeps them (Costly Tricks'
        # scores start again at each hand), else the match's scores.
        done = hands[-1] if isinstance(hands[-1], dict) else {}
        points = done.get("points") if isinstance(done.get("points"), list) else state.get("scores")
        if isinstance(points, list):
            say(N_("Scores: {scores}."), scores=_listing(players, points))
    if state.get("game") == "diabolo" and isinstance(state.get("round"), int) \
            and isinstance(before.get("round"), int) and state["round"] > before["round"]:
        say(N_("Round {n} over."), n=before["round"])

    # The winner.
    winner = state.get("winner")
    if state.get("finished") and not before.get("finished") and winner:
        names = [players[s] for s in winner if isinstance(s, int) and 0 <= s < len(players)]
        if len(names) == 1:
            say(N_("{name} wins!"), name=names[0])
        elif names:
            say(N_("Shared win: {names}"), names=", ".join(names))
    return " ".join(said)


class Voice:
    """Speaks the table's news when ``config["speak"]`` is on.

    ``runner`` starts the process (``subprocess.Popen`` by default; tests
    pass their own and read what would be said); ``notify(template)`` tells
    the table once that espeak-ng is missing."""

    def __init__(self, config: dict, *, runner: Callable = subprocess.Popen,
                 notify: Callable[[str], None] = lambda template: None):
        self.config = config
        self.runner = runner
        self.notify = notify
        self.previous: dict | None = None
        self.process = None
        self.missing = False          # espeak-ng was not found: said once, then silence
        self.said: list[str] = []     # every utterance started, in order (the last few)

    @property
    def enabled(self) -> bool:
        return self.config.get("speak") is True

    def follow(self, change) -> None:
        """After every session change (on the box's thread): say its news."""
        before, self.previous = self.previous, change.state
        if not self.enabled:
            return
        language = normalise(self.config.get("language"))
        text = utterance(before, change, language)
        if text:
            self.say(text, language)

    def say(self, text: str, language: str) -> None:
        """Start speaking ``text``; a running utterance is cut (never waited for)."""
        if self.missing:
            return
        self.stop()
        argv = [COMMAND, "-v", VOICES.get(language, "en"), "--", text]
        try:
            self.process = self.runner(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        except (FileNotFoundError, PermissionError) as exc:
            self.missing = True
            log.warning("cannot speak: %s", exc)
            self.notify(NO_ESPEAK)
            return
        except OSError as exc:               # anything else the system says: silence, not a crash
            log.warning("cannot speak: %s", exc)
            return
        self.said = (self.said + [text])[-20:]

    def stop(self) -> None:
        """Cut the utterance being spoken, if any (and reap one that ended)."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.poll() is None:
                process.terminate()
        except OSError:
            pass
