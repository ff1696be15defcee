"""The Kubernetes executor: cordon and taint nodes, or evict only the pods on one GPU, through the
API server.

``drain_node`` cordons (``spec.unschedulable: true``) and taints (``suanli.io/degraded:NoSchedule``)
the node with one strategic-merge PATCH; ``mark_degraded`` only taints, which also keeps new pods
off it, so both take the node out of service for the guard. Out-of-service nodes are read from
``GET /api/v1/nodes`` (cordoned, or carrying suanli's taint), page by page.

When the cost decision chose a per-GPU drain (``PlannedAction.how``: scope ``gpu``, with the pods
on that GPU), ``drain_node`` evicts those pods instead, one policy/v1 Eviction each
(``POST /api/v1/namespaces/{ns}/pods/{name}/eviction``), and leaves the node in service: the guard
counts the GPU, not the node. A pod is ``namespace/name`` or ``name`` (in the executor's
``namespace``, default ``default``). A 429 is a PodDisruptionBudget (or the API's rate limit)
refusing the eviction: the action fails with that said, never reported as done; a 404 is a pod
already gone. A per-GPU drain with no pod known on the GPU falls back to the node drain, and the
detail says why.

A node, namespace or pod name goes into the API path percent-quoted as one segment, after ``.``,
``..`` and names with ``/`` or ``%`` are refused (the API server's own rule for names in paths), so
a name can neither add a query (``x?dryRun=All``) nor walk the path. The bearer token (``token``, or
``token_file`` re-read for every request, as service-account tokens rotate) is read only by
``prepare`` and live calls, never in a dry run; a token file that is unreadable, not a regular
file, binary, or not one printable word is a one-line InputError.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from suanli.errors import InputError
from suanli.rules.alerts import Alert, PlannedAction
from suanli.rules.effects import Effect
from suanli.rules.executor_base import ActionFailed, BaseExecutor
from suanli.rules.ids import is_name

__all__ = ["KubernetesExecutor", "eviction_body", "pod_ref"]

_MAX_TOKEN_BYTES = 65536
_PAGE = 500
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_ACTIONS = ("drain_node", "mark_degraded")


def _segment(name: str, what: str) -> str:
    """``name`` percent-quoted as one path segment; ActionFailed for what no path may hold."""
    if name in ("", ".", "..") or "/" in name or "%" in name:
        raise ActionFailed(f"{name!r} cannot be a Kubernetes {what} name in an API path")
    return quote(name, safe="")


def pod_ref(pod: str, namespace: str) -> tuple[str, str]:
    """(namespace, name) of an inventory pod (``name`` or ``namespace/name``); ActionFailed unless
    both are Kubernetes names (a DNS label and a DNS subdomain)."""
    ns, _, name = pod.rpartition("/") if "/" in pod else (namespace, "", pod)
    if not _DNS_LABEL.fullmatch(ns) or not _DNS_SUBDOMAIN.fullmatch(name):
        raise ActionFailed(f"pod {pod!r} is not a Kubernetes pod (expected name or namespace/name)")
    return ns, name


def eviction_body(namespace: str, name: str) -> dict[str, Any]:
    """The policy/v1 Eviction of one pod (what ``kubectl drain`` posts)."""
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}


def _status_message(resp: httpx.Response) -> str:
    """The API server's Status message (and its causes), one short line."""
    try:
        body = resp.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    parts = [str(body.get("message") or "")]
    parts += [str(c.get("message")) for c in causes if isinstance(c, dict) and c.get("message")] \
        if isinstance(causes, list) else []
    return " ".join(" ".join(p.split()) for p in parts if p)[:300]


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
                 verify: bool | str = True, timeout_s: float = 10.0, namespace: str = "default") -> None:
        self.api_url = api_url.rstrip("/")
        self.token, self.token_file = token, token_file
        self.verify, self.timeout_s = verify, timeout_s
        self.namespace = namespace

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
        return f"{self.api_url}/api/v1/nodes/{_segment(name, 'node')}"

    def eviction_url(self, namespace: str, name: str) -> str:
        """``.../api/v1/namespaces/<ns>/pods/<name>/eviction``, each name quoted as one segment."""
        return (f"{self.api_url}/api/v1/namespaces/{_segment(namespace, 'namespace')}/pods/"
                f"{_segment(name, 'pod')}/eviction")

    def _check(self, action: PlannedAction) -> None:
        if action.target_kind != "node" or action.action not in _ACTIONS:
            raise ActionFailed(f"kubernetes executor cannot {action.action} a {action.target_kind}")

    def _pods(self, action: PlannedAction) -> list[tuple[str, str]]:
        """The pods a per-GPU drain evicts (empty: the node is drained instead)."""
        how = action.how
        if action.action != "drain_node" or how is None or not how.per_gpu:
            return []
        return [pod_ref(p, self.namespace) for p in how.pods]

    def _fallback(self, action: PlannedAction) -> str:
        how = action.how
        if action.action == "drain_node" and how is not None and how.per_gpu and not how.pods:
            return f" (a per-GPU drain of {how.gpu} was chosen, but no pod is known on it: the node is drained)"
        return ""

    def effect(self, action: PlannedAction) -> Effect:
        self._check(action)
        if not is_name(action.target):
            raise ActionFailed(f"{action.target!r} is not one node name (Kubernetes has no hostlists)")
        if self._pods(action) and action.how is not None and action.how.gpu is not None:
            return Effect(gpus=frozenset({action.how.gpu}))
        return Effect(nodes=frozenset({action.target}))

    def _body(self, action: PlannedAction, alert: Alert) -> dict[str, Any]:
        self._check(action)
        spec: dict[str, Any] = {"taints": [{"key": self.TAINT_KEY, "value": alert.rule, "effect": "NoSchedule"}]}
        if action.action == "drain_node":
            spec["unschedulable"] = True
        return {"spec": spec}

    def describe(self, action: PlannedAction, alert: Alert) -> str:
        pods = self._pods(action)
        if pods and action.how is not None:
            posts = "; ".join(f"POST {self.eviction_url(ns, n)} {json.dumps(eviction_body(ns, n), sort_keys=True)}"
                              for ns, n in pods)
            return f"evict the pods on {action.how.gpu} ({action.how.uuid}) only: {posts}"
        return (f"PATCH {self.node_url(action.target)} {json.dumps(self._body(action, alert), sort_keys=True)}"
                + self._fallback(action))

    def execute(self, action: PlannedAction, alert: Alert) -> str:
        pods = self._pods(action)
        if pods:
            return self._evict(action, pods)
        body, url = self._body(action, alert), self.node_url(action.target)
        headers = {**self._auth_or_fail(), "Content-Type": "application/strategic-merge-patch+json"}
        try:
            resp = httpx.patch(url, json=body, headers=headers, timeout=self.timeout_s, verify=self.verify)
        except httpx.HTTPError as e:
            raise ActionFailed(f"PATCH {url}: {e}") from None
        if resp.status_code >= 300:
            raise ActionFailed(f"PATCH {url}: HTTP {resp.status_code}")
        return f"PATCH {url} -> {resp.status_code}" + self._fallback(action)

    def _evict(self, action: PlannedAction, pods: list[tuple[str, str]]) -> str:
        """One Eviction per pod, every pod tried; ActionFailed naming each pod not evicted."""
        headers = {**self._auth_or_fail(), "Content-Type": "application/json"}
        done, refused = [], []
        for ns, name in pods:
            url = self.eviction_url(ns, name)
            try:
                resp = httpx.post(url, json=eviction_body(ns, name), headers=headers, timeout=self.timeout_s,
                                  verify=self.verify)
            except httpx.HTTPError as e:
                refused.append(f"{ns}/{name}: POST {url}: {e}")
                continue
            code, why = resp.status_code, _status_message(resp)
            if code < 300:
                done.append(f"{ns}/{name} evicted ({code})")
            elif code == 404:
                done.append(f"{ns}/{name} already gone (404)")
            elif code == 429:
                refused.append(f"{ns}/{name}: HTTP 429, the eviction was refused by a PodDisruptionBudget (or the "
                               f"API's rate limit){': ' + why if why else ''}; not evicted")
            else:
                refused.append(f"{ns}/{name}: HTTP {code}{': ' + why if why else ''}")
        gpu = action.how.gpu if action.how is not None else action.target
        if refused:
            raise ActionFailed(f"evicted {len(done)} of {len(pods)} pods on {gpu}: " + "; ".join(done + refused))
        return f"evicted the {len(pods)} pod(s) on {gpu}, node {action.target} stays in service: " + "; ".join(done)

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
