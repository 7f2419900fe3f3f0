"""Hardening headers on every response, and the Content-Security-Policy builder.

The policy allows scripts from this server only: no inline script except the exact ones a
page declares by hash (the import map), nothing from another origin.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def script_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def csp(*script_hashes: str, inline_styles: bool = False) -> str:
    scripts = " ".join(("'self'", *script_hashes))
    styles = "'self' 'unsafe-inline'" if inline_styles else "'self'"
    return (
        f"default-src 'self'; script-src {scripts}; style-src {styles}; img-src 'self' data: blob:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'self'"
    )


_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), payment=()"),
]
_DEFAULT_CSP = csp().encode()


class SecurityHeaders:
    """Pure ASGI middleware: adds the headers a response has not set itself."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in _HEADERS if k not in present]
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", _DEFAULT_CSP))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def same_origin(headers: Mapping[str, str]) -> bool:
    """Whether a request's Origin (when it has one) is the host it was sent to.

    Browsers send Origin with every WebSocket handshake: a page of another site (or another
    server on the LAN) that opens a socket here has an Origin that is not this Host, and is
    refused. Clients that are not browsers send none and are let in (they can send any header).
    """
    origin = headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    host = headers.get("host", "")
    if parts.scheme not in ("http", "https") or not parts.netloc or not host:
        return False
    default = "443" if parts.scheme == "https" else "80"
    return _with_port(parts.netloc.lower(), default) == _with_port(host.lower(), default)


def _with_port(netloc: str, default: str) -> str:
    """host:port, with the scheme's port when none is written (IPv6 in brackets keeps its colons)."""
    return netloc if netloc.rsplit("]", 1)[-1].count(":") == 1 else f"{netloc}:{default}"


_ABSOLUTE_PATH = re.compile(r"(?<![\w.~-])/(?:[\w.@+~-]+/)*[\w.@+~-]+")


def hide_paths(text: str) -> str:
    """A message with every absolute path shortened to what names the model: its folder (for a
    file, the folder and the file: `tiny-bert/config.json`), never where the server keeps it."""

    def short(match: re.Match[str]) -> str:
        parts = match.group(0).split("/")
        return "/".join(parts[-2:]) if "." in parts[-1] and len(parts) > 2 else parts[-1]

    return _ABSOLUTE_PATH.sub(short, text)
