"""Strict field specs for actions and options.

The replay contract is strict: an unknown key, a missing key, a value of the
wrong type or out of range is an error, and numbers that stand for counts,
seats, cards and points are JSON integers (``3.0`` and ``true`` are not).
A game declares the fields of each of its moves and options with these specs
and the framework checks them before the game's own rules run, so a rules
function only ever sees well-typed input.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any, Callable, Mapping

from .errors import InvalidActionError
from .i18n import N_

_MISSING = object()


@dataclass(frozen=True)
class Context:
    """What a field check may need to know: how many seats the table has."""

    seats: int = 0


class Field:
    """One key of an action or of ``options``."""

    required = True

    def __init__(self, *, required: bool = True, default: Any = None, check: Callable | None = None):
        self.required = required
        self.default = default
        self.extra_check = check

    def check(self, value, name: str, ctx: Context):
        value = self.convert(value, name, ctx)
        if self.extra_check is not None:
            self.extra_check(value, name, ctx)
        return value

    def convert(self, value, name: str, ctx: Context):  # pragma: no cover - abstract
        raise NotImplementedError


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Int(Field):
    def __init__(self, lo: int | None = None, hi: int | None = None, **kw):
        super().__init__(**kw)
        self.lo, self.hi = lo, hi

    def convert(self, value, name, ctx):
        if not is_int(value):
            raise InvalidActionError(N_("'{name}' must be a whole number, got {value}"), name=name, value=_show(value))
        lo, hi = self.bounds(ctx)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise InvalidActionError(_range_message(lo, hi), name=name, value=value, lo=lo, hi=hi)
        return value

    def bounds(self, ctx):
        return self.lo, self.hi


class Seat(Int):
    """A seat index 0..n-1 of the current table."""

    def bounds(self, ctx):
        return 0, max(ctx.seats - 1, 0)

    def convert(self, value, name, ctx):
        if not is_int(value):
            raise InvalidActionError(N_("'{name}' must be a seat number, got {value}"), name=name, value=_show(value))
        if not 0 <= value < ctx.seats:
            # The field holds an index (0-based, docs/replay.md); a person counts
            # seats from 1: the message says the table's seats as people do,
            # then what an action sends for them.
            raise InvalidActionError(N_("{value} is not a seat of this table: its {n} seats are 1 to {n} "
                                        "(sent as 0 to {hi} in '{name}')"),
                                     name=name, value=value, hi=ctx.seats - 1, n=ctx.seats)
        return value


class Bool(Field):
    def convert(self, value, name, ctx):
        if not isinstance(value, bool):
            raise InvalidActionError(N_("'{name}' must be true or false, got {value}"), name=name, value=_show(value))
        return value


class Str(Field):
    def __init__(self, max_len: int | None = None, choices=None, **kw):
        super().__init__(**kw)
        self.max_len, self.choices = max_len, choices

    def convert(self, value, name, ctx):
        if not isinstance(value, str):
            raise InvalidActionError(N_("'{name}' must be a string, got {value}"), name=name, value=_show(value))
        if self.max_len is not None and len(value) > self.max_len:
            raise InvalidActionError(N_("'{name}' is longer than {n} characters"), name=name, n=self.max_len)
        if self.choices is not None and value not in self.choices:
            raise InvalidActionError(N_("'{name}' must be one of {choices}, got {value}"), name=name,
                                     choices=", ".join(self.choices), value=_show(value))
        return value


class List(Field):
    def __init__(self, item: Field, min_len: int = 0, max_len: int | None = None, **kw):
        super().__init__(**kw)
        self.item, self.min_len, self.max_len = item, min_len, max_len

    def convert(self, value, name, ctx):
        if not isinstance(value, list):
            raise InvalidActionError(N_("'{name}' must be a list, got {value}"), name=name, value=_show(value))
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            if self.max_len == self.min_len:
                raise InvalidActionError(N_("'{name}' must have {n} entries, got {got}"), name=name, n=self.min_len, got=len(value))
            raise InvalidActionError(N_("'{name}' has {got} entries, which is not allowed"), name=name, got=len(value))
        return tuple(self.item.check(v, f"{name}[{i}]", ctx) for i, v in enumerate(value))


class Dict(Field):
    """A JSON object with string keys checked by ``key`` and values by ``value``."""

    def __init__(self, key: Field, value: Field, **kw):
        super().__init__(**kw)
        self.key, self.value = key, value

    def convert(self, value, name, ctx):
        if not isinstance(value, dict):
            raise InvalidActionError(N_("'{name}' must be an object, got {value}"), name=name, value=_show(value))
        return {self.key.check(k, f"{name} key", ctx): self.value.check(v, f"{name}[{k}]", ctx) for k, v in value.items()}


class Record(Field):
    """A JSON object with a fixed set of keys, each with its own spec."""

    def __init__(self, fields: Mapping[str, Field], **kw):
        super().__init__(**kw)
        self.fields = fields

    def convert(self, value, name, ctx):
        if not isinstance(value, dict):
            raise InvalidActionError(N_("'{name}' must be an object, got {value}"), name=name, value=_show(value))
        return check_record(value, self.fields, ctx, where=name)


class Any_(Field):
    """Accepts any JSON value (a game checks it itself)."""

    def convert(self, value, name, ctx):
        return value


def check_record(obj: Mapping, fields: Mapping[str, Field], ctx: Context, where: str = "", skip=()) -> dict:
    """Check every key of ``obj`` against ``fields``: unknown and missing keys
    are errors, optional ones get their default.  Keys in ``skip`` are ignored."""
    for key in obj:
        if key not in fields and key not in skip:
            if where:
                raise InvalidActionError(N_("unknown key '{key}' in '{where}'"), key=key, where=where)
            raise InvalidActionError(N_("unknown key '{key}'"), key=key)
    out = {}
    for key, spec in fields.items():
        if key in obj:
            out[key] = spec.check(obj[key], key, ctx)
        elif spec.required:
            raise InvalidActionError(N_("missing key '{key}'"), key=key)
        else:
            out[key] = spec.default
    return out


def _range_message(lo, hi):
    if lo is not None and hi is not None:
        return N_("'{name}' must be from {lo} to {hi}, got {value}")
    if lo is not None:
        return N_("'{name}' must be at least {lo}, got {value}")
    return N_("'{name}' must be at most {hi}, got {value}")


def _show(value) -> str:
    """A short rendering of a bad value for an error message."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
