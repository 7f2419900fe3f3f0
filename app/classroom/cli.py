"""The classroom's options of `attention3d`: the teacher token, the data directory, Redis."""

from __future__ import annotations

import argparse
import os
import sys

from app.classroom import auth, rooms, service, store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("classroom")
    group.add_argument(
        "--teacher-token",
        metavar="TOKEN",
        help=f"the token that opens rooms and saves lessons (default ${auth.TOKEN_ENV}, else a new one per start)",
    )
    where = f"where saved lessons live (default ${store.DATA_ENV}, else the user's data folder)"
    group.add_argument("--data-dir", metavar="DIR", help=where)
    group.add_argument(
        "--redis",
        metavar="URL",
        help=f"rooms in Redis, for several processes (default ${service.REDIS_ENV}; e.g. redis://localhost:6379/0)",
    )


def configure(args: argparse.Namespace) -> str:
    """Pass the options to the app (through its environment), print the teacher link and return it."""
    token = args.teacher_token or os.environ.get(auth.TOKEN_ENV) or auth.new_secret()
    problem = auth.check_token(token)
    if problem:
        print(f"attention3d: --teacher-token: {problem}", file=sys.stderr)
        sys.exit(2)
    os.environ[auth.TOKEN_ENV] = token
    os.environ[rooms.BIND_ENV] = args.host
    if args.data_dir:
        os.environ[store.DATA_ENV] = os.path.abspath(args.data_dir)
    if args.redis:
        os.environ[service.REDIS_ENV] = args.redis
    lan = rooms.lan_address() if args.host in ("0.0.0.0", "::") else None
    shown = lan or ("127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host)
    link = f"http://{shown}:{args.port}/?token={token}"
    print("Teacher link (opens rooms and saves lessons; keep it to yourself):")
    print(f"    {link}")
    if lan:
        print(f"Students join at http://{lan}:{args.port}/ (the presenter view shows the room's QR code)")
    elif args.host.startswith("127.") or args.host == "localhost":
        print("Only this computer can reach the server: start with --host 0.0.0.0 for a classroom.")
    sys.stdout.flush()
    return link
