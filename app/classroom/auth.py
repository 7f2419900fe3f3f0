"""The teacher token and the presenter keys: Bearer headers, compared in constant time, never logged.

The teacher token (as Jupyter's) unlocks everything that changes the server's state: opening rooms
and writing lessons. `attention3d` takes it from --teacher-token or $ATTENTION_TEACHER_TOKEN, else
generates one, and prints the teacher link. A room's presenter key drives that room only; the server
keeps its SHA-256, not the key.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets

from fastapi import Request

from app.errors import ClientError

TOKEN_ENV = "ATTENTION_TEACHER_TOKEN"
MIN_TOKEN_CHARS = 16


def new_secret() -> str:
    """A fresh secret of 192 bits (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def teacher_token() -> str:
    """The server's teacher token: $ATTENTION_TEACHER_TOKEN, or one generated now and kept in it."""
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        token = new_secret()
        os.environ[TOKEN_ENV] = token  # the same token for the rest of this process (and its workers)
    return token


def check_token(token: str) -> str | None:
    """Why a teacher token given on the command line is unusable, or None."""
    if len(token) < MIN_TOKEN_CHARS:
        return f"the teacher token needs at least {MIN_TOKEN_CHARS} characters"
    if not all(c.isalnum() or c in "-_.~" for c in token):
        return "the teacher token may hold letters, digits and - _ . ~ only (it travels in a link)"
    return None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bearer(request: Request, what: str) -> str:
    """The Bearer credential of a request; 401 without one."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        msg = f"send the {what} as 'Authorization: Bearer …'"
        raise ClientError(401, ["header", "authorization"], msg, "unauthorized")
    return value.strip()


def same(given: str, expected: str) -> bool:
    """Constant-time comparison of two secrets."""
    return hmac.compare_digest(given.encode(), expected.encode())


def require_teacher(request: Request) -> None:
    """401 without a token, 403 with a wrong one."""
    if not same(bearer(request, "teacher token"), teacher_token()):
        raise ClientError(403, ["header", "authorization"], "that is not this server's teacher token", "forbidden")


def key_matches(given: str, key_digest: str) -> bool:
    return hmac.compare_digest(digest(given), key_digest)


class _RedactTokens(logging.Filter):
    """Access logs show `/?token=…` as `/?token=[hidden]`: the teacher link is never written to a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, str) and "token=" in a for a in record.args):
            record.args = tuple(_TOKEN_IN_URL.sub(r"\1[hidden]", a) if isinstance(a, str) else a for a in record.args)
        return True


_TOKEN_IN_URL = re.compile(r"([?&]token=)[^&\s]*")


def hide_tokens_in_logs() -> None:
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _RedactTokens) for f in logger.filters):
        logger.addFilter(_RedactTokens())
