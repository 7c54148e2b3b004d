"""How a route asks for a credential: the table PIN, or a seat's token.

:mod:`web.auth` holds the rules (the :class:`~web.auth.PinGuard` that
compares and throttles, the :class:`~web.auth.SeatTokens`); this module is
where a request meets them, so that every route asks the same way and
answers a missing or wrong credential the same way:

* :func:`pin_required` — a decorator for a route that changes something
  and needs the PIN whatever it is sent::

      @bp.post("/api/players")
      @pin_required(N_("changing the roster needs the table PIN (header X-Table-Pin)"))
      def add_player(): ...

  The PIN is checked *before* the view runs: a request without it is
  refused before its body is read, so its body can never be the reason of
  the refusal, and a stranger learns nothing from it.
* :func:`require_pin` — the same check, called from inside a view (for a
  route that must look at something else first).
* :func:`pin_shown` — for a route where the PIN is optional and only opens
  more (the full export of a log): False without a PIN, True with the
  right one, and a wrong one refused and counted as everywhere.
* :func:`seat_or_pin` — "this seat's token, or the table PIN": what a
  phone that claimed a seat may do with its own token (enter its own bid,
  end its turn, release its seat), the PIN doing the same for anyone.
* :func:`seat_token` — a seat token alone (reading a seat's private view).
* :func:`owner_required` — a decorator for a route that changes the
  system, not the game (updates, a restore, SSH and release keys): the
  owner's password (header ``X-Owner-Password``), never the PIN alone.

Each refusal says, in the request's language, which credential to send
(the 401 texts are the routes' own, so a phone can tell the table what to
do).  A wrong PIN is compared in one place only, :func:`pin_shown`, so the
throttling of :class:`~web.auth.PinGuard` covers every route alike.
"""

from __future__ import annotations

import functools

from flask import request

from companion.i18n import N_

from .app import companion
from .auth import OWNER_HEADER, PIN_HEADER, TOKEN_HEADER
from .errors import ApiError

# The usual 401 of a route that a seat token or the PIN opens.
SEAT_OR_PIN = N_("this needs the table PIN (header X-Table-Pin) or a seat token (header X-Seat-Token)")


def client() -> str:
    """The address wrong credentials are counted against (per client)."""
    return request.remote_addr or "?"


def credentials() -> tuple[str, str]:
    """The request's ``(PIN, seat token)``, each "" when not sent."""
    return (request.headers.get(PIN_HEADER, "").strip(), request.headers.get(TOKEN_HEADER, "").strip())


def pin_shown() -> bool:
    """Whether the request shows the table PIN: False when it sends none,
    True when it sends the right one; a wrong one is refused (403, or 429
    while this address or the table is throttled) and counted.

    The only place the PIN is compared: every route's PIN goes through the
    guard's throttling here, whichever way the route asks for it."""
    pin, _token = credentials()
    if not pin:
        return False
    companion().guard.check(pin, client())
    return True


def require_pin(missing: str) -> None:
    """Refuse the request unless it shows the right table PIN: 401 with
    ``missing`` (the route's own text, marked with ``N_``) when it sends
    none, 403/429 for a wrong one (:func:`pin_shown`)."""
    if not pin_shown():
        raise ApiError(401, missing)


def pin_required(missing: str):
    """A view decorator: the view runs only for a request that shows the
    right table PIN (:func:`require_pin`, with ``missing`` as the 401's
    text).  Put it under the route's own decorator, so Flask registers the
    guarded view."""
    def decorate(view):
        @functools.wraps(view)
        def guarded(*args, **kwargs):
            require_pin(missing)
            return view(*args, **kwargs)
        return guarded
    return decorate


def owner_shown(missing: str) -> None:
    """Refuse the request unless it shows the owner's password (header
    ``X-Owner-Password``): 401 with ``missing`` when it sends none (the
    table PIN alone is none), 403 when the box has no owner yet or the
    password is wrong, 429 while this address or the box is throttled
    (:class:`~web.auth.OwnerGuard`: at most 10 wrong ones compared, then
    one a minute, from any number of addresses)."""
    c = companion()
    supplied = owner_header()
    if not supplied:
        raise ApiError(401, missing)
    c.owner_guard.refuse_if_blocked(client())
    if c.owner_guard.read_hash() is None:
        raise ApiError(403, NO_OWNER)
    c.owner_guard.check(supplied, client())


def owner_header() -> str:
    """The owner's password as sent.  A header carries bytes, read as
    Latin-1: a client sends the password's UTF-8 bytes (the pages do, and
    curl does with what is typed), which are read back as UTF-8 here; bytes
    that are not UTF-8 are taken as the Latin-1 characters they are."""
    value = request.headers.get(OWNER_HEADER, "")
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


NO_OWNER = N_("this box has no owner yet: the owner password is chosen when set-up ends (the Setup page)")


def owner_required(missing: str):
    """A view decorator for what changes the system rather than the game
    (updates, a restore, SSH and release keys): the view runs only for a
    request that shows the owner's password (:func:`owner_shown`), never
    for the table PIN alone.  ``missing`` is the 401's text and names the
    owner::

        @bp.post("/api/backup/restore")
        @owner_required(N_("restoring a backup is the owner's: send the owner password "
                           "(header X-Owner-Password)"))
        def restore(): ...
    """
    def decorate(view):
        @functools.wraps(view)
        def guarded(*args, **kwargs):
            owner_shown(missing)
            return view(*args, **kwargs)
        return guarded
    return decorate


def seat_token(token: str, seat: int | None = None) -> int:
    """The seat of a seat ``token``; with ``seat``, the token must be that
    seat's.  A token that opens nothing is counted like a wrong PIN for its
    address (never table-wide: a token cannot be guessed) and refused with
    403; an address blocked for its wrong tries gets 429 before any look."""
    c = companion()
    c.guard.refuse_if_blocked(client())
    found = c.seats.seat_of(token)
    if found is None or (seat is not None and found != seat):
        c.guard.miss(client())
        if seat is None:
            raise ApiError(403, N_("this seat token is no longer valid (the seat was released): claim the seat again"))
        raise ApiError(403, N_("this seat token is not the token of seat {seat}"), seat=seat + 1)
    return found


def seat_or_pin(missing: str = SEAT_OR_PIN, seat: int | None = None) -> int | None:
    """The caller's seat when it sends a seat token (of ``seat``, if given:
    :func:`seat_token`), None when it sends the right table PIN instead;
    401 with ``missing`` when it sends neither.  The PIN wins when both are
    sent: whoever has it may do anything a seat's token may.

    The caller decides what a seat may do with its own token (its own bid,
    its own turn): a None seat means the PIN, which may do it all."""
    if pin_shown():
        return None
    _pin, token = credentials()
    if token:
        return seat_token(token, seat)
    raise ApiError(401, missing)
