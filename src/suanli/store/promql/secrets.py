"""The TSDB's credentials, read from files (never from argv or the config's text): a bearer token,
or ``USER:PASSWORD`` for basic auth; ``--bearer-token-file`` / ``--basic-auth-file`` of ``diagnose``
and ``backend.token_file`` / ``backend.basic_auth_file`` of ``serve``'s config."""

from __future__ import annotations

from pathlib import Path

from suanli.errors import InputError

__all__ = ["read_basic_auth", "read_secret"]


def read_secret(path: Path, what: str) -> str:
    """The file's one non-empty line; an InputError naming ``what`` and the file otherwise."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not text or "\n" in text:
        raise InputError(f"{what} {path}: expected one non-empty line")
    return text


def read_basic_auth(path: Path, what: str) -> tuple[str, str]:
    """(user, password) of a ``USER:PASSWORD`` file."""
    user, sep, password = read_secret(path, what).partition(":")
    if not sep or not user:
        raise InputError(f"{what} {path}: expected one line USER:PASSWORD")
    return user, password
