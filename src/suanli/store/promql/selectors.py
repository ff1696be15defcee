"""PromQL text: quoted label values, RE2-escaped alternations, selectors, range durations.

A selector picks one metric's series; a subset of them is picked by the one label that tells the
subset apart best (``label=~"a|b|c"``): the server may return more series than asked for (the
caller keeps only the wanted label sets), never fewer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = ["best_label", "quote", "re_alternation", "selector"]

_RE2_SPECIAL = frozenset("\\.+*?()|[]{}^$")


def quote(value: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def re_alternation(values: Iterable[str]) -> str:
    """An RE2 pattern matching exactly these strings (PromQL anchors it)."""
    return "|".join("".join("\\" + c if c in _RE2_SPECIAL else c for c in v) for v in sorted(set(values)))


def selector(metric: str, extra: Sequence[str] = (), label: str | None = None,
             values: Iterable[str] = ()) -> str:
    """``{__name__="metric", <extra>, label=~"v1|v2"}``."""
    parts = [f"__name__={quote(metric)}", *extra]
    if label is not None:
        vals = sorted(set(values))
        if len(vals) == 1:
            parts.append(f"{label}={quote(vals[0])}")
        else:
            parts.append(f"{label}=~{quote(re_alternation(vals))}")
    return "{" + ", ".join(parts) + "}"


def best_label(wanted: Sequence[Mapping[str, str]], all_series: Sequence[Mapping[str, str]]) -> str | None:
    """The label whose values among ``wanted`` select the fewest unwanted series of ``all_series``
    (ties: the one with more distinct values among ``wanted``); None when no label helps."""
    if len(wanted) >= len(all_series):
        return None
    names = sorted({k for s in wanted for k in s if k != "__name__"})
    best: tuple[int, int, str] | None = None
    for name in names:
        if any(name not in s for s in wanted):
            continue
        vals = {s[name] for s in wanted}
        selected = sum(1 for s in all_series if s.get(name) in vals)
        cand = (selected, -len(vals), name)
        if best is None or cand < best:
            best = cand
    return None if best is None else best[2]
