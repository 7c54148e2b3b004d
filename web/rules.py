"""URL rules whose builders are made at their first use.

Werkzeug compiles two Python functions per rule when the rule is added (to
build its URL back, for ``url_for``): it writes an AST, walks it and runs
``compile()``.  For the app's ~40 routes that is ~2/3 of :func:`create_app`
(~8 ms here, ~70 ms on a Pi Zero), all before the box can serve, for
functions most routes never need: only redirects and the pages' templates
build URLs.  :class:`LazyBuildRule` makes each builder on its first call,
by werkzeug's own code, so what it builds is the same.
"""

from __future__ import annotations

from werkzeug.routing import Rule


class LazyBuildRule(Rule):
    def _compile_builder(self, append_unknown: bool = True):
        attribute = "_build_unknown" if append_unknown else "_build"

        def build_at_first_use(rule, **values):
            # Two threads may both compile it: the same function, the last one kept.
            real = Rule._compile_builder(rule, append_unknown).__get__(rule, None)
            setattr(rule, attribute, real)
            return real(**values)

        return build_at_first_use
