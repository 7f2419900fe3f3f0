"""Rooms: their codes, the address followers join by, who presents, and the socket's close codes.

The socket itself (accepting it, the room's messages out, votes and pings in) is app.web.socket.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from urllib.parse import urlsplit

from app.classroom import auth
from app.classroom.broker import Broker, seat_of
from app.errors import ClientError

# easy to read aloud and to type: no 0/O, 1/I/L (the code is upper case; lower case is accepted)
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
BIND_ENV = "ATTENTION_BIND_HOST"  # set by `attention3d --host`
PUBLIC_ENV = "ATTENTION_PUBLIC_URL"  # e.g. http://classroom.school.lan:8000 when students use another name
PRESENTER_PROTOCOL = "attention3d.presenter"
KEY_PROTOCOL = "key."  # a presenter's socket offers "attention3d.presenter" and "key.<presenter key or teacher token>"
FOLLOWER_PROTOCOL = "attention3d.follower"
SEAT_PROTOCOL = "seat."  # a follower's socket offers "attention3d.follower" and "seat.<the seat its page kept>"

CLOSE_NO_ROOM = 4404
CLOSE_FULL = 4409
CLOSE_RATE = 4429
CLOSE_TOO_BIG = 1009
CLOSE_SLOW = 1013  # try again later: too far behind, or the room store (Redis) lost
CLOSE_ORIGIN = 4403


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def valid_code(code: str) -> bool:
    """Whether `code` (normalised) could be a code new_code() made."""
    return len(code) == CODE_LENGTH and all(c in ALPHABET for c in code)


def normal_code(code: str) -> str:
    """The code as stored: upper case, without the spaces or dashes a student may type."""
    return code.strip().upper().replace("-", "").replace(" ", "")[:32]


def lan_address() -> str | None:
    """This machine's address on the LAN (the one its default route uses), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent, this only picks a route
            address = str(s.getsockname()[0])
    except OSError:
        return None
    return None if ipaddress.ip_address(address).is_loopback else address


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def join_base(host: str, scheme: str) -> str:
    """The address students reach this server by: $ATTENTION_PUBLIC_URL, else the Host the teacher
    used (`host`, as the request's Host header has it), except that a loopback Host (127.0.0.1,
    localhost) becomes the LAN address when the server listens on every interface (--host 0.0.0.0)."""
    public = os.environ.get(PUBLIC_ENV)
    if public:
        return public.rstrip("/")
    parts = urlsplit(f"//{host}")
    name, port = parts.hostname or "127.0.0.1", parts.port
    if _loopback(name) and os.environ.get(BIND_ENV) in ("0.0.0.0", "::"):
        name = lan_address() or name
    if ":" in name:
        name = f"[{name}]"
    return f"{scheme}://{name}" + (f":{port}" if port else "")


async def check_presenter(broker: Broker, code: str, given: str) -> None:
    """404 when there is no room `code`; 403 unless `given` is its presenter key (or the teacher token)."""
    digest = await broker.room_key(code)
    if digest is None:
        raise ClientError(404, ["path", "code"], f"no room {code[:12]!r} (closed, expired or never opened)", "no_room")
    if not (auth.key_matches(given, digest) or auth.same(given, auth.teacher_token())):
        raise ClientError(403, ["header", "authorization"], "that is not this room's presenter key", "forbidden")


def presenter_socket(offered: list[str], digest: str) -> bool:
    """Whether a socket offering these subprotocols is the room's presenter: it offers
    "attention3d.presenter" and "key.<the room's presenter key>" (or the teacher token: the teacher's
    phone used as a remote)."""
    keys = [p[len(KEY_PROTOCOL) :] for p in offered if p.startswith(KEY_PROTOCOL)]
    return PRESENTER_PROTOCOL in offered and any(
        auth.key_matches(k, digest) or auth.same(k, auth.teacher_token()) for k in keys
    )


def kept_seat(offered: list[str], code: str) -> str | None:
    """The seat a follower's page kept from an earlier hello in room `code` ("seat.<token>", signed by this
    server), or None: the socket then gets a new seat."""
    for p in offered:
        if p.startswith(SEAT_PROTOCOL):
            return seat_of(code, p[len(SEAT_PROTOCOL) :])
    return None
