"""Where an HTTP backend is and how to log in: the connection fields the PromQL store and the
remote-write sender share, and the ``httpx`` client they open with them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx

__all__ = ["HttpEndpoint"]


@dataclass(frozen=True)
class HttpEndpoint:
    url: str
    """The server's URL (what each user appends to it is in its own docstring)."""
    username: str | None = None
    """Basic-auth user (with ``password``)."""
    password: str | None = None
    bearer_token: str | None = None
    """Sent as ``Authorization: Bearer ...`` (exclusive with basic auth)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra request headers, e.g. ``(("X-Scope-OrgID", "tenant-a"),)`` for a Mimir tenant."""
    timeout_s: float = 30.0
    """Per request (connect, read and write each)."""
    verify_tls: bool | str = True
    """False, or the path of a CA bundle."""

    def http_client(self, base_headers: Mapping[str, str] | None = None, *,
                    transport: httpx.BaseTransport | None = None) -> httpx.Client:
        """A client sending ``base_headers``, then this endpoint's ``headers`` and credentials."""
        headers = {**(base_headers or {}), **dict(self.headers)}
        if self.bearer_token:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        auth = (self.username, self.password or "") if self.username else None
        return httpx.Client(timeout=self.timeout_s, headers=headers, auth=auth, verify=self.verify_tls,
                            transport=transport)
