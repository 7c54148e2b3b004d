"""The phone pages.  A placeholder scoreboard at ``/`` for now: the phone
pages (issue 5) replace this module's templates and routes."""

from __future__ import annotations

import json

from flask import Blueprint, render_template

from .app import companion
from .errors import request_language

bp = Blueprint("pages", __name__)


@bp.get("/")
def index():
    state = json.dumps(companion().session.public(), ensure_ascii=False, indent=1)
    return render_template("index.html", state=state, lang=request_language())
