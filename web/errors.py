"""Every refusal of the web API is JSON ``{"error": "..."}`` with a 4xx status.

Views raise :class:`ApiError` (an English template marked with ``N_`` and its
parameters, like the core's errors) or let a core ``ActionError`` through;
Werkzeug's own HTTP errors (404, 405, 413...) and anything unexpected are
turned into the same JSON shape here, so no route can answer an HTML page or
a traceback.  Texts are translated into the request's language
(``?lang=``, the ``lang`` cookie, or ``Accept-Language``).
"""

from __future__ import annotations

import json
import logging

from flask import Flask, current_app, jsonify, request
from waitress.channel import ClientDisconnected
from waitress.task import ErrorTask
from werkzeug.exceptions import HTTPException
from werkzeug.routing import IntegerConverter

from companion.errors import ActionError, IllegalActionError, StoreError
from companion.i18n import LANGUAGES, N_, gettext, normalise, translate_error
from companion.limits import MAX_STORED_INT

log = logging.getLogger("companion.web")

LANG_COOKIE = "lang"        # set by the pages' language switch (web/pages.py)


class ApiError(Exception):
    """A refusal with its status, an English template and its parameters."""

    def __init__(self, status: int, template: str, *, headers: dict | None = None, **params):
        super().__init__(template)
        self.status = status
        self.template = template
        self.params = params
        self.headers = headers or {}

    def text(self, language: str) -> str:
        return gettext(self.template, language, **self.params)


def request_language() -> str:
    """``?lang=xx`` if given, else the ``lang`` cookie (the page's EN/FR
    switch), else the best of ``Accept-Language``, else the box's."""
    wanted = request.args.get("lang")
    if wanted:
        return normalise(wanted)
    chosen = request.cookies.get(LANG_COOKIE, "").strip().lower()
    if chosen in LANGUAGES:
        return chosen
    best = request.accept_languages.best_match(LANGUAGES)
    if best:
        return normalise(best)
    companion = current_app.extensions.get("companion")
    return normalise(companion.config.get("language") if companion else None)


# French punctuation's no-break spaces (before : ; ! ? and inside « »): not
# "printable" to Python, but no line break either, and a page must show them.
_SPACES = frozenset("\u00a0\u202f")


def one_line(text: str) -> str:
    """The error on one line, as promised: a control character that came
    from the request (a button name with a newline...) is shown escaped;
    a no-break space stays one."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in _SPACES else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def error_response(status: int, text: str, headers: dict | None = None):
    response = jsonify(error=one_line(text))
    response.status_code = status
    for key, value in (headers or {}).items():
        response.headers[key] = value
    response.headers["Cache-Control"] = "no-store"
    return response


class Refused(HTTPException):
    """An :class:`ApiError` that can be raised where Flask only catches
    Werkzeug's errors: while the URL is matched (a converter)."""

    def __init__(self, status: int, template: str, **params):
        super().__init__()
        self.code = status
        self.template = template
        self.params = params


class StoredInt(IntegerConverter):
    """``<int:...>`` in every route: a number the store can hold.  A larger
    one (``/api/history/99999999999999999999999``) would reach SQLite as an
    integer it cannot bind; it is refused here with a clear 400 instead."""

    def to_python(self, value: str) -> int:
        # 19 digits cover every 64-bit integer; never run int() on a huge string.
        number = int(value) if len(value) <= 19 else MAX_STORED_INT + 1
        if number > MAX_STORED_INT:
            shown = value if len(value) <= 24 else value[:21] + "..."
            raise Refused(400, N_("the number {value} in the address is too large (at most {max})"),
                          value=shown, max=MAX_STORED_INT)
        return number


class JsonErrorTask(ErrorTask):
    """waitress's own refusals (a body over its limit, headers too large,
    bytes that are not HTTP) in the API's JSON shape, in the box's language:
    the app never sees these requests, so this is the only place to say it.

    A client may be gone before its refusal is written (it sent its bytes
    and closed, or the network loop evicted it): that is normal and ends
    here, in silence.  Left to waitress, the ``ClientDisconnected`` would
    be caught by its channel, whose handler then reads the request's path,
    which a request refused before its first line was parsed does not have:
    a second exception, two tracebacks in the log, outside any client's
    log budget."""

    def service(self):
        try:
            super().service()
        except ClientDisconnected:
            self.close_on_finish = True

    def execute(self):
        error = self.request.error
        template = HTTP_TEXTS.get(error.code)
        if error.code == 413:
            text = gettext(template, limit=self.channel.server.adj.max_request_body_size)
        elif template and "{" not in template:
            text = gettext(template)
        else:
            text = error.reason.lower()
        body = json.dumps({"error": text}, ensure_ascii=False).encode("utf-8")
        self.status = f"{error.code} {error.reason}"
        self.response_headers.extend([("Content-Type", "application/json"), ("Cache-Control", "no-store")])
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


# Werkzeug's errors, said the companion's way.  Unlisted codes fall back to
# Werkzeug's English name of the status.
HTTP_TEXTS = {
    400: N_("bad request"),
    404: N_("nothing here: see docs/api.md for the routes"),
    405: N_("method {method} is not allowed here (allowed: {allowed})"),
    413: N_("the request body is too large (at most {limit} bytes)"),
    415: N_("unsupported content type"),
    431: N_("the request headers are too large"),
}

# Headers of Werkzeug's error responses that are worth keeping (Allow, Retry-After).
_KEEP = {"allow", "retry-after", "www-authenticate"}


def register(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def api_error(exc: ApiError):
        return error_response(exc.status, exc.text(request_language()), exc.headers)

    @app.errorhandler(ActionError)
    def action_error(exc: ActionError):
        # A refused action: nothing was stored.  The message never holds an
        # unrevealed value (the core's rule); it goes to the submitter only,
        # and nothing of the request is logged.
        return error_response(409 if isinstance(exc, IllegalActionError) else 400, translate_error(exc, request_language()))

    @app.errorhandler(StoreError)
    def store_error(exc: StoreError):
        log.error("store error: %s", exc)
        return error_response(503, translate_error(exc, request_language()), {"Retry-After": "5"})

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        code = exc.code or 400
        language = request_language()
        headers = {k: v for k, v in exc.get_headers() if k.lower() in _KEEP}
        if isinstance(exc, Refused):
            text = gettext(exc.template, language, **exc.params)
        elif code == 405:
            allowed = headers.get("Allow", "")
            text = gettext(HTTP_TEXTS[405], language, method=request.method, allowed=allowed)
        elif code == 413:
            text = gettext(HTTP_TEXTS[413], language, limit=app.config.get("MAX_CONTENT_LENGTH"))
        elif code in HTTP_TEXTS:
            text = gettext(HTTP_TEXTS[code], language)
        else:
            text = gettext(exc.name or "error", language)
        return error_response(code, text, headers)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        # A bug.  The log gets the traceback (never a request body: none is
        # logged anywhere); the client gets one plain line.
        log.exception("unexpected error in %s %s", request.method, request.path,
                      extra={"client": request.remote_addr or ""})     # escaped and rate-limited (web.logsafe)
        return error_response(500, gettext(N_("internal error: see the companion's log"), request_language()))

