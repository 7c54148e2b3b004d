"""``appliance-vm --wifi``: the box's own Wi-Fi, end to end (issue 23).

The interface is in README.md: ``check(vm, say) -> dict``.  Written by the
Wi-Fi work; until then it says so.
"""

from __future__ import annotations


def check(vm, say) -> dict:
    raise NotImplementedError("the --wifi check is not written yet (issue 23)")
