"""The teacher token and the presenter keys: compared in constant time, never logged (app.web.auth reads
them from a request's Bearer header).

The teacher token (as Jupyter's) unlocks everything that changes the server's state: opening rooms
and writing lessons. `attention3d` takes it from --teacher-token-file or $ATTENTION_TEACHER_TOKEN
(or --teacher-token, which other users can read in the process list), else generates one, and
prints the teacher link. A room's presenter key drives that room only; the server
keeps its SHA-256, not the key.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
from urllib.parse import unquote_plus

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


def same(given: str, expected: str) -> bool:
    """Constant-time comparison of two secrets."""
    return hmac.compare_digest(given.encode(), expected.encode())


def key_matches(given: str, key_digest: str) -> bool:
    return hmac.compare_digest(digest(given), key_digest)


def redact(text: str) -> str:
    """A URL (or a log line) with the value of every query parameter whose name, percent-decoded,
    mentions "token" replaced by [hidden]: `/?token=…`, `/?%74oken=…` and `/?TOKEN=…` alike."""
    if "?" not in text and "&" not in text:
        return text
    return _PARAM.sub(_hide, text)


_PARAM = re.compile(r"([?&;])([^=&;\s?#]*)=([^&;\s#]*)")


def _hide(match: re.Match[str]) -> str:
    name = match.group(2)
    for _ in range(3):  # what a browser decodes once, and what a second decoding would reveal
        name = unquote_plus(name)
    if "token" in name.lower():
        return f"{match.group(1)}{match.group(2)}=[hidden]"
    return match.group(0)


class _RedactTokens(logging.Filter):
    """Logs show `/?token=…` as `/?token=[hidden]`: the teacher link is never written to a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def hide_tokens_in_logs() -> None:
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactTokens) for f in logger.filters):
            logger.addFilter(_RedactTokens())
