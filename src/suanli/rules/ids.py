"""The canonical entity id grammar (spec/inventory.md "Canonical entity ids") as the action layer
enforces it, and Slurm hostlist expansion.

An action's target reaches a command line (``scontrol update NodeName=...``), an API path
(``/api/v1/nodes/...``) or a shell-free argument list, so it must be an id, never syntax:

- a *name* (rack, node, switch, storage, job, sla): 1 to 253 characters of ``A-Z a-z 0-9 . _ -``,
  starting with a letter or digit and ending with a letter, digit or ``_`` (so no ``-rf``, ``..``,
  ``?``, ``/``, ``=``, spaces or brackets);
- ``<node>/gpu<N>``, ``<node>/nvswitch<N>``, ``<node>/<nic>``, ``<switch>/<port>``, ``<job>/rank<N>``,
  and a link ``<switch>/<port>~<switch>/<port>``.

A Slurm hostlist (``node-[001-040]``, ``a[1-2]-b[01-04]``, ``n1,n[3-5]``) is not an id; where a
node target is one, :func:`node_members` expands it so that it counts as every node it names.
"""

from __future__ import annotations

import re

__all__ = ["MAX_HOSTLIST", "expand_hostlist", "is_id", "is_name", "node_members"]

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9_])?"
_PORT = rf"{_NAME}/{_NAME}"
_GRAMMAR: dict[str, re.Pattern[str]] = {
    **{k: re.compile(_NAME) for k in ("rack", "node", "switch", "storage", "job", "sla", "pdu")},
    "gpu": re.compile(rf"{_NAME}/gpu\d{{1,4}}"),
    "nvswitch": re.compile(rf"{_NAME}/nvswitch\d{{1,4}}"),
    "nic": re.compile(_PORT),
    "switch_port": re.compile(_PORT),
    "rank": re.compile(rf"{_NAME}/rank\d{{1,9}}"),
    "link": re.compile(rf"{_PORT}~{_PORT}"),
}
MAX_HOSTLIST = 65536
"""A hostlist naming more nodes than this is refused rather than expanded."""

_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


def is_name(text: str) -> bool:
    """A plain name: what a node, job, rack, switch or storage id is."""
    return _GRAMMAR["node"].fullmatch(text) is not None


def is_id(kind: str, text: str) -> bool:
    """``text`` is a canonical id of ``kind`` (an unknown kind: a name or names joined by ``/``)."""
    pattern = _GRAMMAR.get(kind)
    if pattern is None:
        return all(is_name(part) for part in text.split("/"))
    return pattern.fullmatch(text) is not None


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if depth < 0 or depth > 1:
            raise ValueError(f"unbalanced brackets in hostlist {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced brackets in hostlist {text!r}")
    parts.append("".join(cur))
    return parts


def _numbers(body: str, whole: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        m = _RANGE.fullmatch(item)
        if m is None:
            raise ValueError(f"bad range {item!r} in hostlist {whole!r}")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo) or int(hi) - int(lo) >= MAX_HOSTLIST:
            raise ValueError(f"bad range {item!r} in hostlist {whole!r}")
        width = len(lo)
        out.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
        if len(out) > MAX_HOSTLIST:
            raise ValueError(f"hostlist {whole!r} names more than {MAX_HOSTLIST} nodes")
    return out


def _expand_one(part: str, whole: str) -> list[str]:
    start = part.find("[")
    if start < 0:
        return [part]
    end = part.index("]", start)
    heads = [part[:start] + n for n in _numbers(part[start + 1:end], whole)]
    tails = _expand_one(part[end + 1:], whole)
    if len(heads) * len(tails) > MAX_HOSTLIST:
        raise ValueError(f"hostlist {whole!r} names more than {MAX_HOSTLIST} nodes")
    return [h + t for h in heads for t in tails]


def expand_hostlist(text: str) -> list[str]:
    """Every host a Slurm hostlist names, in order, zero padding kept (``n[08-10]`` -> n08 n09 n10);
    ValueError on a malformed list or one of more than MAX_HOSTLIST hosts."""
    out: list[str] = []
    for part in _split_top(text):
        if not part:
            raise ValueError(f"empty element in hostlist {text!r}")
        out.extend(_expand_one(part, text))
        if len(out) > MAX_HOSTLIST:
            raise ValueError(f"hostlist {text!r} names more than {MAX_HOSTLIST} nodes")
    return out


def node_members(target: str) -> list[str]:
    """The nodes a node target names: itself when it is a node id, every member when it is a Slurm
    hostlist of node ids; ValueError otherwise (with what is wrong)."""
    if is_name(target):
        return [target]
    if "[" not in target and "," not in target:
        raise ValueError(f"{target!r} is not a node id (spec/inventory.md: letters, digits, '.', '_', '-')")
    members = expand_hostlist(target)
    bad = [m for m in members if not is_name(m)]
    if bad:
        raise ValueError(f"hostlist {target!r} names {bad[0]!r}, which is not a node id")
    return sorted(set(members))
