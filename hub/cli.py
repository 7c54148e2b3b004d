"""``companion hub ...``: run the club hub and manage it from the organiser's shell.

    companion hub serve --db URL [--host H] [--port P]
    companion hub add-box NAME --db URL          (the key is the last line printed)
    companion hub revoke-box NAME --db URL
    companion hub rerate --db URL [--game ID]
    companion hub link NAME SAME_AS --db URL     (two roster names, one player)
    companion hub split NAME --db URL
    companion hub tournament create NAME --game ID --players A,B,... --boxes B1,B2,... --db URL
    companion hub tournament join T NAME --db URL
    companion hub tournament seat T [--json] --db URL     (seat the next round)
    companion hub tournament show T [--json] --db URL
    companion hub tournament boxes T B1,B2,... --db URL   (the boxes of tables 1, 2, ...)
    companion hub tournament result T TABLE --order A,B,C,D [--points 3,2,1,0] --db URL
                                                (a table played without a box)

Organiser actions are commands, not web pages: whoever may run them has the
database URL, which is the organiser's credential (no second secret to keep).
``--db`` may be left out when ``COMPANION_HUB_DB`` holds the URL.
"""

from __future__ import annotations

import json
import os
import sys


def add_parser(sub) -> None:
    hub = sub.add_parser("hub", help="the club hub: league, live tables, tournaments (PostgreSQL)")
    cmds = hub.add_subparsers(dest="hub_command", required=True, parser_class=sub._parser_class)

    def with_db(p):
        p.add_argument("--db", default=os.environ.get("COMPANION_HUB_DB"),
                       help="the PostgreSQL URL, postgresql://user@host:port/db (or $COMPANION_HUB_DB)")
        return p

    s = with_db(cmds.add_parser("serve", help="run the hub"))
    s.add_argument("--host", default="0.0.0.0")
    s.add_argument("--port", type=int, default=8100)
    with_db(cmds.add_parser("add-box", help="register a box and print its key")).add_argument("name")
    with_db(cmds.add_parser("revoke-box", help="revoke a box's key")).add_argument("name")
    bk = with_db(cmds.add_parser("backup", help="write the latest backup a box sent (restore it with 'companion restore')"))
    bk.add_argument("name")
    bk.add_argument("file")
    r = with_db(cmds.add_parser("rerate", help="recompute every rating from scratch"))
    r.add_argument("--game")
    lk = with_db(cmds.add_parser("link", help="two roster names are one player"))
    lk.add_argument("name")
    lk.add_argument("same_as")
    with_db(cmds.add_parser("split", help="undo a link")).add_argument("name")
    t = cmds.add_parser("tournament", help="create and run a tournament")
    tc = t.add_subparsers(dest="t_command", required=True, parser_class=sub._parser_class)
    c = with_db(tc.add_parser("create"))
    c.add_argument("name")
    c.add_argument("--game", required=True)
    c.add_argument("--players", required=True, help="roster names, comma-separated")
    c.add_argument("--boxes", required=True, help="box names, comma-separated: table 1, 2, ...")
    j = with_db(tc.add_parser("join"))
    j.add_argument("tournament", type=int)
    j.add_argument("name")
    for name in ("seat", "show"):
        p = with_db(tc.add_parser(name))
        p.add_argument("tournament", type=int)
        p.add_argument("--json", action="store_true", help="print JSON for scripts")
        if name == "seat":
            p.add_argument("--without-boxes", action="store_true",
                           help="seat tables beyond the boxes too (their results entered with 'result')")
    res = with_db(tc.add_parser("result", help="enter the result of a table played without a box"))
    res.add_argument("tournament", type=int)
    res.add_argument("table", type=int)
    res.add_argument("--order", required=True, help="the table's players, best first, comma-separated")
    res.add_argument("--points", help="their tournament points, comma-separated (default: placing points)")
    b = with_db(tc.add_parser("boxes", help="the tournament's boxes, table 1, 2, ... (from the next round)"))
    b.add_argument("tournament", type=int)
    b.add_argument("boxes", help="box names, comma-separated")


def run(args) -> int:
    try:
        import psycopg
    except ImportError:
        print("companion hub: the hub needs its extra: pip install 'companion[hub]'", file=sys.stderr)
        return 1
    from .db import HubError, connect, migrate

    if not args.db:
        print("companion hub: give the database URL with --db (or COMPANION_HUB_DB)", file=sys.stderr)
        return 2
    if args.hub_command == "serve":
        from .serve import serve

        return serve(args.db, args.host, args.port)
    try:
        with connect(args.db) as conn:
            migrate(conn)
            return _organiser(conn, args)
    except HubError as exc:
        print(f"companion hub: {exc}", file=sys.stderr)
        return 1
    except psycopg.Error as exc:
        text = str(exc).strip().splitlines()
        print(f"companion hub: database: {text[0] if text else type(exc).__name__}", file=sys.stderr)
        return 1


def _organiser(conn, args) -> int:
    from . import league, tournament
    from .db import HubError, add_box, revoke_box

    cmd = args.hub_command
    if cmd == "add-box":
        key = add_box(conn, args.name)
        print(f"Box {args.name!r} registered. On the box, set COMPANION_HUB_URL and this key as COMPANION_HUB_KEY:")
        print(key)
    elif cmd == "revoke-box":
        revoke_box(conn, args.name)
        print(f"Box {args.name!r} revoked: its key is refused from now on.")
    elif cmd == "backup":
        from .db import latest_backup

        row = latest_backup(conn, args.name)
        with open(args.file, "wb") as fh:
            fh.write(bytes(row["backup"]))
        print(f"The backup of {args.name!r} made {row['created']} ({row['games']} games) is in {args.file}.")
    elif cmd == "rerate":
        print(f"{league.rerate(conn, args.game)} games rated.")
    elif cmd == "link":
        league.link(conn, args.name, args.same_as)
        print(f"{args.name!r} is now the same player as {args.same_as!r}; ratings recomputed.")
    elif cmd == "split":
        league.split(conn, args.name)
        print(f"{args.name!r} is a player of their own again; ratings recomputed.")
    elif cmd == "tournament":
        if args.t_command == "create":
            split_list = lambda s: [x.strip() for x in s.split(",") if x.strip()]  # noqa: E731
            tid = tournament.create(conn, args.name, args.game, split_list(args.players), split_list(args.boxes))
            print(f"Tournament {tid} created.")
        elif args.t_command == "join":
            print(f"{args.name} plays from round {tournament.join(conn, args.tournament, args.name)}.")
        elif args.t_command == "boxes":
            names = [x.strip() for x in args.boxes.split(",") if x.strip()]
            tournament.set_boxes(conn, args.tournament, names)
            print(f"Tournament {args.tournament}: tables 1 to {len(names)} at {', '.join(names)}.")
        elif args.t_command == "result":
            order = [x.strip() for x in args.order.split(",") if x.strip()]
            try:
                points = [int(x) for x in args.points.split(",")] if args.points else None
            except ValueError:
                raise HubError("--points are whole numbers, comma-separated") from None
            tournament.enter_result(conn, args.tournament, args.table, order, points)
            print(f"Table {args.table}: {', '.join(order)} (best first) entered.")
        elif args.t_command == "seat":
            tournament.seat_round(conn, args.tournament, args.without_boxes)
            view = tournament.view(conn, args.tournament)
            if args.json:
                print(json.dumps({"round": view["rounds"][-1], "repeats": view["repeats"], "exact": view["exact"]},
                                 ensure_ascii=False))
            else:
                print("\n".join(_round_text(view, view["rounds"][-1])))
        else:
            view = tournament.view(conn, args.tournament)
            if args.json:
                print(json.dumps(view, ensure_ascii=False, indent=1))
            else:
                print("\n".join(_show_text(view)))
    return 0


def _round_text(view: dict, rnd: dict) -> list[str]:
    """A round's seating as the organiser reads it: a table per block, seats from 1."""
    out = [f"Round {rnd['round']} of {view['name']} ({view['game']})"]
    for t in rnd["tables"]:
        if t.get("entered"):
            state = f"finished (entered: {', '.join(t['entered'])})"
        else:
            state = "finished" if t["done"] else "playing"
        where = f"at {t['box']}" if t["box"] else "without a box (enter its result: tournament result)"
        out.append(f"  Table {t['table']} {where} — {state}")
        for seat, name in enumerate(t["players"], start=1):
            out.append(f"    seat {seat}: {name}")
    if rnd["byes"]:
        out.append(f"  Bye: {', '.join(rnd['byes'])}")
    if rnd["round"] == view["round"] and view.get("repeats") is not None:
        how = "the fewest possible" if view.get("exact") else "the fewest found (the search was cut short)"
        out.append(f"  Repeat pairings: {view['repeats']} ({how})")
    return out


def _show_text(view: dict) -> list[str]:
    out = [f"Tournament {view['id']}: {view['name']} ({view['game']}), round {view['round']}", "",
           f"  {'#':>3}  {'Player':<24} {'Points':>6} {'Wins':>5} {'Played':>6} {'Byes':>5}"]
    for i, s in enumerate(view["standings"], start=1):
        out.append(f"  {i:>3}  {s['name']:<24} {s['points']:>6} {s['wins']:>5} {s['played']:>6} {s['byes']:>5}")
    if view.get("notices"):
        out.append("")
    for n in view.get("notices", []):
        what = "changed" if n["finished"] else "was taken back"
        out.append(f"  ! Round {n['round']}, table {n['table']}: the result {what} after the round was closed "
                   f"(the later rounds were seated on the old result).")
    for rnd in reversed(view["rounds"]):
        out += [""] + _round_text(view, rnd)
    return out
