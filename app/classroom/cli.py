"""The classroom's options of `attention3d`: the teacher token, the data directory, Redis, per-address rules."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.classroom import auth, database, limits, rooms, service, store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("classroom")
    group.add_argument(
        "--teacher-token-file",
        metavar="PATH",
        help=f"a file holding the token that opens rooms and saves lessons (or ${auth.TOKEN_ENV}; "
        "else a new one per start)",
    )
    group.add_argument(
        "--teacher-token",
        metavar="TOKEN",
        help="the token itself (visible to other users of this computer in the process list: prefer the file)",
    )
    where = f"where saved lessons live (default ${store.DATA_ENV}, else the user's data folder)"
    group.add_argument("--data-dir", metavar="DIR", help=where)
    group.add_argument(
        "--redis",
        metavar="URL",
        help=f"rooms in Redis, for several processes (default ${service.REDIS_ENV}; e.g. redis://localhost:6379/0)",
    )
    group.add_argument(
        "--followers-per-address",
        type=int,
        metavar="N",
        help=f"followers one device (address) may have in a room (default {limits.FOLLOWERS_PER_ADDRESS}; "
        f"${limits.FOLLOWERS_PER_ADDRESS_ENV}); raise it when a class shares one address (NAT)",
    )
    group.add_argument(
        "--seats-per-address",
        type=int,
        metavar="N",
        help=f"phones behind one address (a school's NAT) that may vote in a room (default {limits.SEATS_PER_ADDRESS}; "
        f"${limits.SEATS_PER_ADDRESS_ENV})",
    )
    group.add_argument(
        "--votes-per-seat",
        action="store_true",
        help="count one vote per page (seat): the default, kept for old scripts",
    )
    group.add_argument(
        "--database",
        metavar="URL",
        help=f"where lessons live: sqlite:///FILE or postgresql://user@host:port/db (default ${database.URL_ENV},"
        " else the data folder's SQLite file); PostgreSQL lets several machines share them",
    )
    group.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes on this machine (default 1); more than 1 needs --redis (docs/school-server.md)",
    )


def _token(args: argparse.Namespace) -> str:
    if args.teacher_token_file:
        try:
            return Path(args.teacher_token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            print(f"attention3d: --teacher-token-file: cannot read {args.teacher_token_file}: {e}", file=sys.stderr)
            sys.exit(2)
    return str(args.teacher_token or os.environ.get(auth.TOKEN_ENV) or auth.new_secret())


def configure(args: argparse.Namespace) -> str:
    """Pass the options to the app (through its environment), print the teacher link and return it."""
    scheme = "https" if getattr(args, "ssl_certfile", None) else "http"
    token = _token(args)
    problem = auth.check_token(token)
    if problem:
        flag = "--teacher-token-file" if args.teacher_token_file else "--teacher-token"
        print(f"attention3d: {flag}: {problem}", file=sys.stderr)
        sys.exit(2)
    if args.followers_per_address is not None:
        if args.followers_per_address < 1:
            print("attention3d: --followers-per-address must be ≥ 1", file=sys.stderr)
            sys.exit(2)
        os.environ[limits.FOLLOWERS_PER_ADDRESS_ENV] = str(args.followers_per_address)
    if args.seats_per_address is not None:
        if args.seats_per_address < 1:
            print("attention3d: --seats-per-address must be ≥ 1", file=sys.stderr)
            sys.exit(2)
        os.environ[limits.SEATS_PER_ADDRESS_ENV] = str(args.seats_per_address)
    if args.votes_per_seat:
        os.environ[limits.VOTES_PER_ADDRESS_ENV] = "0"
    os.environ[auth.TOKEN_ENV] = token
    os.environ[rooms.BIND_ENV] = args.host
    if args.data_dir:
        os.environ[store.DATA_ENV] = os.path.abspath(args.data_dir)
    if args.redis:
        os.environ[service.REDIS_ENV] = args.redis
    check_database(args)
    if args.workers < 1 or args.workers > 64:
        print("attention3d: --workers: between 1 and 64 processes", file=sys.stderr)
        sys.exit(2)
    os.environ["ATTENTION_WORKERS"] = str(args.workers)  # with Redis, the per-address limits are shared
    if args.workers > 1 and not os.environ.get(service.REDIS_ENV):
        print(
            f"attention3d: --workers {args.workers} needs --redis URL: a room's followers reach any of the workers,"
            " and only Redis carries the presenter's changes between them (docs/school-server.md)",
            file=sys.stderr,
        )
        sys.exit(2)
    lan = rooms.lan_address() if args.host in ("0.0.0.0", "::") else None
    shown = lan or ("127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host)
    link = f"{scheme}://{shown}:{args.port}/?token={token}"
    show_teacher_link(link)
    if lan:
        print(f"Students join at {scheme}://{lan}:{args.port}/ (the presenter view shows the room's QR code)")
    elif args.host.startswith("127.") or args.host == "localhost":
        print("Only this computer can reach the server: start with --host 0.0.0.0 for a classroom.")
    sys.stdout.flush()
    return link


LINK_FILE = "teacher-link.txt"


def show_teacher_link(link: str) -> None:
    """The teacher link (its token opens rooms and saves lessons): printed to a terminal only. Under a
    service manager, or with the output sent to a file, the output is a log that others may read:
    the link goes to a file of the data folder that only this user can read, and the output says where."""
    if sys.stdout.isatty():
        print("Teacher link (opens rooms and saves lessons; keep it to yourself):")
        print(f"    {link}")
        return
    path = store.default_data_dir() / LINK_FILE
    try:
        store.private_dir(path.parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)  # a file left by an earlier start keeps no wider mode
            out.write(link + "\n")
    except OSError as e:
        print(f"The teacher link was not written to {path} ({e.strerror}): start from a terminal to see it")
        return
    print(f"Teacher link written to {path} (readable by this user only; the output never shows the token)")


def check_database(args: argparse.Namespace) -> None:
    """--database (or $ATTENTION_DATABASE_URL): opened and migrated now; unusable or unreachable → one line, exit 2."""
    url = args.database or os.environ.get(database.URL_ENV)
    if not url:
        return
    try:
        store.Store.open(store.default_data_dir(), url).close()
    except (database.BadURL, database.Unavailable) as e:
        print(f"attention3d: --database: {e}", file=sys.stderr)
        sys.exit(2)
    os.environ[database.URL_ENV] = url
