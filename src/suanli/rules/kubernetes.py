"""The Kubernetes executor: cordon and taint nodes through the API server.

``drain_node`` cordons (``spec.unschedulable: true``) and taints (``suanli.io/degraded:NoSchedule``)
the node with one strategic-merge PATCH; ``mark_degraded`` only taints, which also keeps new pods
off it, so both take the node out of service for the guard. Out-of-service nodes are read from
``GET /api/v1/nodes`` (cordoned, or carrying suanli's taint), page by page.

A node name goes into the API path percent-quoted as one segment, after ``.``, ``..`` and names with
``/`` or ``%`` are refused (the API server's own rule for names in paths), so a name can neither add
a query (``x?dryRun=All``) nor walk the path. The bearer token (``token``, or ``token_file`` re-read
for every request, as service-account tokens rotate) is read only by ``prepare`` and live calls,
never in a dry run; a token file that is unreadable, not a regular file, binary, or not one
printable word is a one-line InputError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from suanli.errors import InputError
from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.effects import Effect
from suanli.rules.executor_base import ActionFailed, BaseExecutor
from suanli.rules.ids import is_name

__all__ = ["KubernetesExecutor"]

_MAX_TOKEN_BYTES = 65536
_PAGE = 500


def _read_token(path: str) -> str:
    p = Path(path)
    try:
        if not p.is_file():
            raise InputError("token_file: not a regular file", file=path)
        with p.open("rb") as f:
            data = f.read(_MAX_TOKEN_BYTES + 1)
    except OSError as e:
        raise InputError(f"token_file: cannot read: {e.strerror}", file=path) from None
    if len(data) > _MAX_TOKEN_BYTES:
        raise InputError(f"token_file: larger than {_MAX_TOKEN_BYTES} bytes, not a token", file=path)
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise InputError("token_file: binary data, not a bearer token (expected one line of printable ASCII)",
                         file=path) from None
    _check_token(text, f"{path}: token_file")
    return text


def _check_token(text: str, where: str) -> None:
    if not text or not all(0x21 <= ord(c) <= 0x7E for c in text):
        raise InputError(f"{where}: expected one word of printable ASCII (a bearer token)")


class KubernetesExecutor(BaseExecutor):
    """Through the API server at ``api_url`` with a bearer token (``token`` or ``token_file``; with
    neither, no Authorization header, as behind ``kubectl proxy``)."""

    TAINT_KEY = "suanli.io/degraded"

    def __init__(self, api_url: str, token: str | None = None, token_file: str | None = None,
                 verify: bool | str = True, timeout_s: float = 10.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.token, self.token_file = token, token_file
        self.verify, self.timeout_s = verify, timeout_s

    def prepare(self) -> None:
        """Check the credentials before a live or shadow run starts (InputError if unusable)."""
        self._headers()

    def _headers(self) -> dict[str, str]:
        if self.token is not None:
            _check_token(self.token.strip(), "executors: kubernetes token")
            token = self.token.strip()
        elif self.token_file:
            token = _read_token(self.token_file)
        else:
            return {}
        return {"Authorization": f"Bearer {token}"}

    def node_url(self, name: str) -> str:
        """``.../api/v1/nodes/<name>``, the name quoted as one path segment."""
        if name in ("", ".", "..") or "/" in name or "%" in name:
            raise ActionFailed(f"{name!r} cannot be a Kubernetes node name in an API path")
        return f"{self.api_url}/api/v1/nodes/{quote(name, safe='')}"

    def effect(self, action: PlannedAction) -> Effect:
        if action.target_kind != "node" or action.action not in ("drain_node", "mark_degraded"):
            raise ActionFailed(f"kubernetes executor cannot {action.action} a {action.target_kind}")
        if not is_name(action.target):
            raise ActionFailed(f"{action.target!r} is not one node name (Kubernetes has no hostlists)")
        return Effect(nodes=frozenset({action.target}))

    def _body(self, action: PlannedAction, alert: Alert) -> dict[str, Any]:
        if action.target_kind != "node" or action.action not in ("drain_node", "mark_degraded"):
            raise ActionFailed(f"kubernetes executor cannot {action.action} a {action.target_kind}")
        spec: dict[str, Any] = {"taints": [{"key": self.TAINT_KEY, "value": alert.rule, "effect": "NoSchedule"}]}
        if action.action == "drain_node":
            spec["unschedulable"] = True
        return {"spec": spec}

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        return f"PATCH {self.node_url(action.target)} {json.dumps(self._body(action, alert), sort_keys=True)}"

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        body, url = self._body(action, alert), self.node_url(action.target)
        headers = {**self._auth_or_fail(), "Content-Type": "application/strategic-merge-patch+json"}
        try:
            resp = httpx.patch(url, json=body, headers=headers, timeout=self.timeout_s, verify=self.verify)
        except httpx.HTTPError as e:
            raise ActionFailed(f"PATCH {url}: {e}") from None
        if resp.status_code >= 300:
            raise ActionFailed(f"PATCH {url}: HTTP {resp.status_code}")
        return f"PATCH {url} -> {resp.status_code}"

    def _auth_or_fail(self) -> dict[str, str]:
        try:
            return self._headers()
        except InputError as e:
            raise ActionFailed(str(e)) from None

    def out_of_service(self) -> set[str] | None:
        """Nodes cordoned or carrying suanli's taint, from ``GET /api/v1/nodes`` (all pages)."""
        out: set[str] = set()
        cont: str | None = None
        url = f"{self.api_url}/api/v1/nodes"
        while True:
            params = {"limit": str(_PAGE), **({"continue": cont} if cont else {})}
            try:
                resp = httpx.get(url, params=params, headers=self._auth_or_fail(), timeout=self.timeout_s,
                                 verify=self.verify)
                if resp.status_code >= 300:
                    raise ActionFailed(f"GET {url}: HTTP {resp.status_code}")
                page = resp.json()
            except (httpx.HTTPError, ValueError) as e:
                raise ActionFailed(f"GET {url}: {e}") from None
            out |= _cordoned(page)
            cont = (page.get("metadata") or {}).get("continue") if isinstance(page, dict) else None
            if not cont:
                return out


def _cordoned(page: Any) -> set[str]:
    out: set[str] = set()
    items = page.get("items") if isinstance(page, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name = (item.get("metadata") or {}).get("name")
        spec = item.get("spec") or {}
        taints = spec.get("taints") or []
        ours = any(isinstance(t, dict) and t.get("key") == KubernetesExecutor.TAINT_KEY for t in taints)
        if isinstance(name, str) and (spec.get("unschedulable") is True or ours):
            out.add(name)
    return out
