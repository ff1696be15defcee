"""The token that guards every state change (and, unless ``auth.open_reads``, every read).

The token comes from ``auth.token_file`` (its content, whitespace stripped) or the environment
variable ``auth.token_env``; requests carry it as ``Authorization: Bearer <token>``, and it is
compared in constant time (:func:`hmac.compare_digest`). Without a configured token nothing that
needs one is allowed: the service still starts, serves open reads and refuses every change.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from pathlib import Path

from fastapi import HTTPException, Request

from suanli.errors import InputError
from suanli.web.settings import AuthSettings

__all__ = ["MIN_TOKEN_CHARS", "Auth"]

MIN_TOKEN_CHARS = 16
"""A shorter token is refused at start (it could be guessed)."""


class Auth:
    """Checks requests against the token; :meth:`require_write` / :meth:`require_read` are FastAPI dependencies."""

    def __init__(self, token: str | None, *, open_reads: bool = False) -> None:
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            raise InputError(f"the token must be at least {MIN_TOKEN_CHARS} characters long", key="auth")
        self._token = token.encode() if token is not None else None
        self.open_reads = open_reads

    @classmethod
    def from_settings(cls, settings: AuthSettings, environ: Mapping[str, str]) -> Auth:
        """The token of ``auth.token_file``, else of ``auth.token_env`` (InputError if the file is unreadable)."""
        token: str | None = None
        if settings.token_file is not None:
            try:
                token = Path(settings.token_file).read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise InputError(f"cannot read the token file: {exc.strerror or exc}", file=settings.token_file,
                                 key="auth.token_file") from None
        elif settings.token_env and environ.get(settings.token_env):
            token = environ[settings.token_env].strip()
        return cls(token or None, open_reads=settings.open_reads)

    @property
    def configured(self) -> bool:
        return self._token is not None

    def allows(self, authorization: str | None) -> bool:
        """True when the ``Authorization`` header carries the token."""
        if self._token is None or not authorization:
            return False
        scheme, _, given = authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token)

    def require_write(self, request: Request) -> None:
        """Dependency of every route that changes state: 401 without the token."""
        if not self.allows(request.headers.get("authorization")):
            raise HTTPException(401, "this request changes state and needs the token (Authorization: Bearer ...)",
                                headers={"WWW-Authenticate": "Bearer"})

    def require_read(self, request: Request) -> None:
        """Dependency of every read route: open only with ``auth.open_reads: true``."""
        if not self.open_reads and not self.allows(request.headers.get("authorization")):
            raise HTTPException(401, "reads need the token here (or auth.open_reads: true)",
                                headers={"WWW-Authenticate": "Bearer"})
