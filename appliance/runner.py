"""``companion run``: the appliance's one start sequence, and its close.

The order, and why:

1. the settings, a restore staged by the Backup page swapped in
   (:func:`appliance.backup.finish_pending`), the store, what a rolled-back
   version acknowledged carried back into it (:mod:`companion.carry_back`),
   the table session;
2. **the box** (buttons and panel, :mod:`hardware`): its first frame is on
   the panel before Flask and waitress are even imported (~1 s on a Pi
   Zero 2 W), so the table sees the companion alive at once;
3. **the web side** (:mod:`web`): the app, then the server
   (:class:`web.serve.Server`), which only serves HTTP;
4. once listening: the club hub's feed, the join address and QR code on the
   panel, the signal handlers, ``READY=1`` and the watchdog for systemd
   (:mod:`appliance.sdnotify`), the box's pins, mDNS, and the watch for a
   network that comes later (:mod:`appliance.netwatch`);
5. on SIGTERM or SIGINT (or a restore that asks for a restart): the server
   stops, then everything above in reverse, the store last.

This module owns the process: no other module installs a signal handler or
talks to systemd.  The adapters are imported here only, to run the appliance;
the other commands never pay for them.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from companion import config as cfg
from companion import names
from companion.i18n import set_language

from . import netwatch, sdnotify

log = logging.getLogger("companion.web")

RESTART_EXIT = 75       # a restore was staged: systemd (Restart=on-failure) or os.execv starts us again


def run(args) -> int:
    """The appliance, box first: the store, the session and the box (its
    first frame on the panel) come up before the web side is even imported.
    Flask and waitress are most of the start-up time, ~1 s on a Pi Zero 2 W;
    the table sees the companion alive meanwhile, and phones join a moment
    later.  The adapters are imported only here, to run the appliance.

    The cyclic garbage collector is off until serving starts (see
    :func:`serve`): imports make tens of thousands of objects that
    live for ever, and scanning them again and again is ~8 % of the start."""
    if args.mock and not args.host:
        # A laptop demo shows the PIN on /dev and presses buttons for anyone
        # who can reach it: it stays on this computer unless --host says so.
        args.host = "127.0.0.1"
    gc.disable()
    try:
        return _run_box_first(args)
    finally:
        gc.enable()         # already on once serving; here for a start that failed


def _run_box_first(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from companion.limits import StoreLimits
    from companion.session import TableSession
    from companion.store import Store

    data_dir = Path(args.data) if getattr(args, "data", None) else cfg.default_data_dir()
    config = cfg.load(data_dir, getattr(args, "config", None))
    try:
        limits = StoreLimits.from_config(config)
    except ValueError as exc:           # a setting out of range: one clear line
        print(f"companion: {exc}", file=sys.stderr)
        return 2
    mock = bool(getattr(args, "mock", False))
    config["mock"] = mock
    config["data_dir"] = str(data_dir)         # wifi.json there: the box's own Wi-Fi (web/portal.py)
    set_language(config.get("language"))
    if mock:
        os.environ.setdefault("GPIOZERO_PIN_FACTORY", "mock")
    from .backup import finish_pending

    if finish_pending(data_dir):         # a restore from the web page, staged before the restart
        logging.getLogger("companion.backup").info("a backup was restored")
        config = cfg.load(data_dir, getattr(args, "config", None))
        config.update(mock=mock, data_dir=str(data_dir))
        set_language(config.get("language"))
    store = Store(data_dir, limits=limits)
    _update_notice(store, data_dir, config)
    _after_open(store, data_dir)
    session = TableSession(store)
    box = _start_box(session, config, mock)
    if box is not None:
        logging.getLogger("hardware.box").info("box: first frame drawn")
    code = serve(args, (config, store, session, box), start_extras=_join_hub)
    if code == RESTART_EXIT and not os.environ.get("INVOCATION_ID"):
        # A restore from the web page on a companion that systemd does not
        # run (a laptop, a terminal): start again in place, as the unit would.
        os.execv(sys.executable, [sys.executable, "-m", "appliance.cli", *sys.argv[1:]])
    return code


def _update_notice(store, data_dir: Path, config: dict) -> None:
    """An update that was rolled back says so on the panel and the phones, once."""
    from companion.i18n import gettext
    from .updates import Layout, start_notice

    try:
        notice = start_notice(Layout(data=data_dir, root=Path(config.get("update_state") or Layout().root)),
                              gettext)
    except OSError:
        notice = None
    if notice:
        store.warnings.append(notice)


def _after_open(store, data_dir: Path) -> None:
    """Once the store has opened, before the session picks up its game: what
    a rolled-back version acknowledged comes back into it
    (:mod:`companion.carry_back`), and what a restore replaced goes, unless
    the store opened only by being repaired (then it stays for the operator)."""
    from companion.carry_back import carry_back

    store.warnings.extend(carry_back(store))
    if not store.recovered:
        from .backup import drop_replaced

        try:
            drop_replaced(data_dir)
        except OSError as exc:
            logging.getLogger("companion.backup").warning("what a restore replaced stays: %s", exc)


def _join_hub(app, store, session, config):
    """Feed the club hub when ``hub_url``/``hub_key`` are set (hub/feeder.py)."""
    from hub.box import attach

    return attach(app, store, session, config)


def _start_box(session, config: dict, mock: bool):
    """The buttons and screen, or None (the table still works from phones)."""
    try:
        import hardware

        # The pins once serving (see serve): "Starting…" on the panel till then.
        box = hardware.Box(session, config, mock=mock, pins_later=True)
        box.start()
        return box
    except Exception as exc:       # missing package, no pins, a broken driver...
        logging.getLogger("companion.web").error("running without the box (buttons and screen): %s: %s",
                                                 type(exc).__name__, exc)
        return None


def table_pin(config: dict) -> str:
    """``COMPANION_PIN`` (already folded into config by companion.config), the
    config file's ``pin``, or 4 random digits for this start."""
    pin = config.get("pin")
    if pin is None or str(pin).strip() == "":
        from web.auth import new_pin

        return new_pin()
    return str(pin).strip()


def serve(args, parts, start_extras=None) -> int:
    """``companion run [--mock] [--host H] [--port P] [--data DIR] [--config FILE] [--dev-server]``.

    ``parts``: the config, store, session and box (or None), already
    started by :func:`run` — the box before the web side
    (Flask, waitress) is even imported, so its first frame comes sooner.
    ``start_extras(app, store, session, config)``, if given, is called once the
    server is listening and returns the function that stops what it started
    (the composition root joins the box to its club hub this way)."""
    from web.app import create_app
    from web.mdns import start_mdns
    from web.serve import Server, install_safe_log

    config, store, session, box = parts
    config["dev_anywhere"] = bool(getattr(args, "dev_anywhere", False))   # /dev beyond loopback
    host = getattr(args, "host", None) or config["host"]
    port = getattr(args, "port", None)
    port = config["port"] if port is None else port
    mock = config["mock"]
    pin = table_pin(config)
    app = create_app(session, box=box, config=config, pin=pin)
    install_safe_log(handlers=True)     # every logger's records escaped, one line each
    try:
        server = Server(app, host, port, config, dev=bool(getattr(args, "dev_server", False)))
    except OSError as exc:
        app.extensions["companion"].close()
        _close(box, store)
        print(f"companion: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1

    restarting = []

    def restart() -> None:
        # A restore was staged (web/backup.py): stop, and let the start swap it in.
        restarting.append(True)
        server.stop()
    app.extensions["companion.restart"] = restart
    stop_extras = start_extras(app, store, session, config) if start_extras else (lambda: None)
    url = netwatch.join_url(host, server.port, config)
    config["url"] = url
    if box is not None:
        try:
            box.show_join(url, pin)
        except Exception:
            log.exception("the box cannot show the join screen")

    def on_signal(signum, frame):
        # Not server.stop() here: the handler runs on the serving thread, which
        # may hold a stream hub's lock at that moment (a phone hanging up), and
        # stop() takes it too.  A thread of its own waits for it instead.
        threading.Thread(target=server.stop, name="companion-stop", daemon=True).start()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    print(f"companion: serving {url}  table PIN {pin}" + ("  (mock box: /dev)" if mock else ""), flush=True)
    sdnotify.notify("READY=1")
    if box is not None and hasattr(box, "attach_pins"):
        box.attach_pins()       # a box started with pins_later claims its buttons now, on its own thread
    # The look-alike names' table (a large JSON read, off every request's
    # path): in the background once the table is up, never before the
    # panel's first frame or serving.
    names.warm()
    # Everything made so far lives as long as the process: out of the
    # collector's sight (a full collection would scan it all: ~15 ms here,
    # over 0.1 s on a Pi Zero, at a random moment), and back on for the rest.
    gc.freeze()
    gc.enable()
    watchdog = sdnotify.Watchdog(lambda: server.alive(within=3.0)).start()
    # Phones find the box by its friendly name (mDNS).  Only the real box
    # advertises: a laptop demo (--mock) or a loopback server stays quiet.
    advertise = config.get("mdns", True) and not mock and not host.startswith("127.") and host != "localhost"
    name = config.get("name") or "companion"
    mdns = [start_mdns(name, server.port) if advertise else (lambda: None)]

    def network_changed(address: str) -> None:
        # A network came up (or changed) after the start: the join address
        # and QR code follow it, and the table is announced on it.
        new_url = netwatch.join_url(host, server.port, config)
        config["url"] = new_url
        print(f"companion: network: phones join at {new_url}", flush=True)
        if box is not None:
            box.show_join(new_url, app.extensions["companion"].pin)
        if advertise:
            mdns[0]()
            mdns[0] = start_mdns(name, server.port)

    # Served on every address (0.0.0.0): watch for a network that comes later.
    wildcard = host in ("", "0.0.0.0", "::")
    stop_watch = (netwatch.watch(lambda: netwatch.box_address(config), network_changed,
                                 first=urlsplit(url).hostname) if wildcard else (lambda: None))
    try:
        server.serve_forever()
    finally:
        sdnotify.notify("STOPPING=1")
        stop_watch()
        stop_extras()
        mdns[0]()
        watchdog.stop()
        _close(box, store)
    return RESTART_EXIT if restarting else 0


def _close(box, store) -> None:
    if box is not None:
        try:
            box.close()
        except Exception:
            log.exception("closing the box failed")
    try:
        store.close()
    except Exception:
        log.exception("closing the store failed")
