"""A network that comes after the box (issue 22): appliance/netwatch.py."""

from __future__ import annotations

import threading

from appliance import netwatch


def test_a_new_address_is_reported_once_and_a_failing_callback_is_not_fatal():
    answers = iter(["127.0.0.1", "127.0.0.1", "10.0.2.15", "10.0.2.15", "10.42.0.1"])
    last = ["10.42.0.1"]
    seen, done = [], threading.Event()

    def address():
        try:
            return next(answers)
        except StopIteration:
            return last[0]

    def changed(new):
        seen.append(new)
        if new == "10.0.2.15":
            raise RuntimeError("a broken handler")       # logged; the watch goes on
        done.set()

    stop = netwatch.watch(address, changed, every=0.01, first="127.0.0.1")
    assert done.wait(10), seen
    stop()
    assert seen == ["10.0.2.15", "10.42.0.1"]


def test_no_change_no_call():
    calls = []
    stop = netwatch.watch(lambda: "192.168.1.20", calls.append, every=0.01)
    threading.Event().wait(0.1)
    stop()
    assert calls == []


def test_the_join_address_without_a_router_is_an_interface_s_and_else_loopback():
    from appliance.netwatch import interface_addresses, lan_address

    def no_route():
        raise OSError("Network is unreachable")

    assert lan_address(route=lambda: "192.168.1.20") == "192.168.1.20"
    assert lan_address(route=no_route, interfaces=lambda: ["10.42.0.1"]) == "10.42.0.1"
    assert lan_address(route=no_route, interfaces=lambda: []) == "127.0.0.1"
    assert all(not a.startswith("127.") for a in interface_addresses())
