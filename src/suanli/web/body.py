"""Request bodies under limits: the bytes on the wire, and what ``Content-Encoding: gzip`` expands to."""

from __future__ import annotations

import zlib

from starlette.requests import Request

__all__ = ["BodyError", "decode_content", "read_body"]


class BodyError(Exception):
    """A body that cannot be taken: ``status`` (400, 413, 415) and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body; 413 as soon as it (or its announced ``Content-Length``) passes ``max_bytes``."""
    announced = request.headers.get("content-length")
    if announced is not None and announced.isdigit() and int(announced) > max_bytes:
        raise BodyError(413, f"request body of {announced} bytes is over the limit of {max_bytes}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BodyError(413, f"request body is over the limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def decode_content(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """The body with its ``Content-Encoding`` (gzip, or none) undone, at most ``max_bytes`` of it."""
    enc = (encoding or "identity").strip().lower()
    if enc == "identity":
        return body
    if enc not in ("gzip", "x-gzip"):
        raise BodyError(415, "unsupported Content-Encoding (expected gzip or none)")
    return gunzip(body, max_bytes)


def gunzip(body: bytes, max_bytes: int) -> bytes:
    """Decompress gzip data, refusing (413) to expand past ``max_bytes``, 400 for data that is not gzip."""
    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise BodyError(400, f"body is not valid gzip ({exc})") from None
    if len(out) > max_bytes:
        raise BodyError(413, f"gzip body expands past the limit of {max_bytes} bytes")
    if not d.eof:
        raise BodyError(400, "gzip body is cut short")
    return out
