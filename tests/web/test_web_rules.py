"""web/rules.py: URL builders made at first use build what werkzeug's own do."""

from __future__ import annotations

from flask import url_for
from werkzeug.routing import Map, Rule

from web_support import make_app
from web.rules import LazyBuildRule


def _sample(rule) -> dict:
    return {name: ("7" if type(rule._converters[name]).__name__ in ("StoredInt", "IntegerConverter") else "a b/é")
            for name in rule.arguments}


def test_every_route_builds_the_url_werkzeugs_rule_builds(session):
    app = make_app(session)
    rules = list(app.url_map.iter_rules())
    # Flask adds /static/ in its constructor, before create_app picks the rule class.
    assert len(rules) > 20 and all(isinstance(r, LazyBuildRule) for r in rules if r.endpoint != "static")
    plain = Map(converters=app.url_map.converters)
    twins = []
    for rule in rules:
        twin = Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods, defaults=rule.defaults)
        plain.add(twin)
        twins.append((rule, twin))
    for rule, twin in twins:
        values = _sample(rule)
        for unknown in (False, True):
            extra = {"page": "2"} if unknown else {}
            assert rule.build({**values, **extra}, append_unknown=unknown) == \
                twin.build({**values, **extra}, append_unknown=unknown), rule.rule


def test_url_for_in_the_app(session):
    app = make_app(session)
    with app.test_request_context():
        rule = next(r for r in app.url_map.iter_rules() if r.arguments)
        url = url_for(rule.endpoint, **{k: 3 if "int" in str(rule.rule) else "x" for k in rule.arguments})
        assert url.startswith("/") and app.url_map.bind("localhost").match(url)[0] == rule.endpoint
