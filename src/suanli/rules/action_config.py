"""The ``actions:`` and ``executors:`` sections of a rule file, validated where they are parsed.

Nothing here fails open: ``dry_run`` and ``shadow`` take only a real YAML boolean (``true`` /
``false``, never ``~``, ``0``, ``no`` or a quoted string); fractions are finite and within [0, 1];
counts are whole numbers; every executor's settings are checked against its kind (a shell command
is an argument list that does not start a shell, a Slurm ``job_ids`` map pairs inventory job ids
with Slurm job ids). Every refusal is an InputError naming the rule file and line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from string import Formatter
from typing import Any

import yaml

from suanli.errors import InputError
from suanli.rules.conditions import parse_duration
from suanli.rules.ids import is_id

__all__ = ["ACTIONS", "CAN", "EXECUTOR_KINDS", "TEMPLATE_FIELDS", "ActionsConfig", "ExecutorSpec", "check_command",
           "check_executor_action", "parse_actions_section", "parse_executors_section"]

ACTIONS: tuple[str, ...] = ("mark_degraded", "retire_gpu", "drain_node", "reschedule_job", "open_ticket",
                            "notify", "reset_gpu", "reboot_node")
EXECUTOR_KINDS: tuple[str, ...] = ("slurm", "kubernetes", "webhook", "shell", "log")
CAN: dict[str, tuple[str, ...]] = {
    "slurm": ("drain_node", "mark_degraded", "reboot_node", "reschedule_job"),
    "kubernetes": ("drain_node", "mark_degraded"),
}
"""The actions an executor kind can carry out (a kind not listed carries out any: it is told the
action and does what its URL or command does). Slurm has no GPU reset, nor a GPU to retire;
Kubernetes' API has neither a GPU reset nor a node reboot."""
TEMPLATE_FIELDS: tuple[str, ...] = ("action", "target", "target_kind", "rule", "entity", "text")
EFFECTS: tuple[str, ...] = ("out_of_service", "none")
_BOOL_TEXT = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "csh", "tcsh", "fish", "busybox",
                     "pwsh", "powershell", "cmd", "cmd.exe"})
_INTERPRETERS = re.compile(r"(python|perl|ruby|node|php|lua|tclsh|awk|gawk|mawk|osascript)[0-9.]*")
_CODE_FLAGS = frozenset({"-c", "-e", "-E", "-r", "--eval", "--command"})
_SLURM_JOB = re.compile(r"\d{1,12}(?:_\d{1,9})?")
_MAX_COUNT = 1_000_000_000


@dataclass(frozen=True)
class ActionsConfig:
    """How planned actions are carried out (all have safe defaults; docs/safety.md)."""

    dry_run: bool = True
    """Plan and audit, never execute, touch nothing (no command, no API call, no token read)."""
    shadow: bool = False
    """Shadow mode: read the cluster's state and credentials like a live run, record exactly what
    would be sent, send nothing. Takes precedence over ``dry_run: false``."""
    dedup_window_s: float = 3600.0
    """The same action on the same target is not repeated within this window."""
    rate_limit_count: int = 20
    """At most this many actions ..."""
    rate_limit_window_s: float = 600.0
    """... per this many seconds (all rules together)."""
    max_drain_fraction: float = 0.05
    """Never have more than this share of all nodes out of service at once (at least one node)."""
    max_job_drain_fraction: float = 0.25
    """Nor more than this share of one job's nodes (at least one node)."""
    breaker_window_s: float = 300.0
    """The circuit breaker's sliding window."""
    breaker_fleet_fraction: float = 0.5
    """It trips when actions in the window would take out more than this share of all nodes ..."""
    breaker_max_nodes: int = 50
    """... or more than this many nodes ..."""
    breaker_max_gpus: int = 400
    """... or more than this many GPUs (a node's GPUs count with it) ..."""
    breaker_max_jobs: int = 10
    """... or requeue more than this many jobs."""
    audit_log: str | None = None
    """JSON-lines file every decision is appended to (None: ``<database>.audit.jsonl``)."""

    @property
    def mode(self) -> str:
        """``dry_run``, ``shadow`` or ``live`` (only ``dry_run: false`` without shadow is live)."""
        if self.shadow:
            return "shadow"
        return "dry_run" if self.dry_run else "live"

    def __post_init__(self) -> None:
        for f in fields(self):
            check_setting(f.name, getattr(self, f.name))


@dataclass(frozen=True)
class ExecutorSpec:
    """Which executor carries out one action: ``kind`` (slurm, kubernetes, webhook, shell, log) and settings."""

    kind: str
    settings: dict[str, Any] = field(default_factory=dict)


def _number(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"{name}: expected a number, got {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"{name}: expected a finite number, got {v!r}")
    return float(v)


def check_setting(name: str, v: Any) -> Any:
    """One ``actions:`` value, checked against its field (ValueError naming it); returns it."""
    if name in ("dry_run", "shadow"):
        if not isinstance(v, bool):
            raise ValueError(f"{name}: expected true or false, got {v!r}")
    elif name.endswith("_fraction"):
        if not 0.0 <= _number(name, v) <= 1.0:
            raise ValueError(f"{name}: expected a fraction within [0, 1], got {v!r}")
    elif name.endswith("_s"):
        if _number(name, v) < 0:
            raise ValueError(f"{name}: expected a duration of 0 or more, got {v!r}")
    elif name.startswith(("rate_limit_count", "breaker_max_")):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MAX_COUNT:
            raise ValueError(f"{name}: expected a whole number from 0 to {_MAX_COUNT}, got {v!r}")
    elif name == "audit_log" and v is not None and (not isinstance(v, str) or not v.strip() or "\0" in v):
        raise ValueError(f"audit_log: expected a file path, got {v!r}")
    return v


def _err(file: str, node: yaml.Node, what: str) -> InputError:
    return InputError(what, file=file, line=node.start_mark.line + 1)


def _construct(file: str, node: yaml.Node) -> Any:
    try:
        return yaml.SafeLoader("").construct_object(node, deep=True)
    except ValueError as exc:                    # an integer past Python's 4,300-digit limit
        raise _err(file, node, f"a value suanli cannot read ({str(exc).split(';')[0]})") from None


def _mapping(file: str, node: yaml.Node, what: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise _err(file, node, f"{what}: expected a mapping")
    return {str(k.value): v for k, v in node.value}


def _value(file: str, key: str, attr: str, node: yaml.Node) -> Any:
    if attr in ("dry_run", "shadow"):
        plain_bool = (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:bool"
                      and node.style is None and node.value in _BOOL_TEXT)
        if not plain_bool:
            shown = node.value if isinstance(node, yaml.ScalarNode) else "a collection"
            raise _err(file, node, f"actions.{key}: expected true or false, got {shown!r} "
                                   "(only a real boolean; ~, null, 0, no and quoted strings are refused)")
    val = _construct(file, node)
    try:
        if attr.endswith("_s") and isinstance(val, str):
            val = parse_duration(val)
        return check_setting(attr, val)
    except (ValueError, OverflowError) as e:     # OverflowError: an integer no float holds
        raise _err(file, node, f"actions.{key}: {str(e).removeprefix(attr + ': ')}") from None


def parse_actions_section(file: str, node: yaml.Node) -> ActionsConfig:
    """The ``actions:`` mapping; durations as ``5m`` or seconds."""
    names = [f.name for f in fields(ActionsConfig)]
    kw: dict[str, Any] = {}
    for key, vnode in _mapping(file, node, "actions").items():
        attr = key + "_s" if key + "_s" in names else key
        if attr not in names:
            valid = ", ".join(n.removesuffix("_s") if n.endswith("_window_s") else n for n in names)
            raise _err(file, vnode, f"actions: unknown key {key!r}; valid: {valid}")
        kw[attr] = _value(file, key, attr, vnode)
    return ActionsConfig(**kw)


def check_command(argv: Any) -> list[str]:
    """A shell executor's command: a non-empty list of strings that does not start a shell or an
    inline-code interpreter, with placeholders only from TEMPLATE_FIELDS; ValueError otherwise."""
    if isinstance(argv, str):
        raise ValueError("command must be an argument list such as [logger, -t, suanli, '{target}'], "
                         "not a string (a string would have to be split like a shell)")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("command must be a non-empty list of strings")
    for i, arg in enumerate(argv):
        base = arg.rsplit("/", 1)[-1]
        if base in _SHELLS:
            raise ValueError(f"command starts a shell ({arg!r}): a filled-in target could inject commands; "
                             "run the program directly")
        if _INTERPRETERS.fullmatch(base) and any(a in _CODE_FLAGS for a in argv[i + 1:]):
            raise ValueError(f"command runs inline code through {arg!r}: a filled-in target could inject "
                             "code; run a script file instead")
        try:
            parsed = list(Formatter().parse(arg))
        except ValueError as e:
            raise ValueError(f"command argument {arg!r}: {e}") from None
        for _, name, spec, conv in parsed:
            if name is not None and (name not in TEMPLATE_FIELDS or spec or conv):
                raise ValueError(f"command argument {arg!r}: unknown placeholder {{{name}}}; "
                                 f"valid: {', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}")
    return list(argv)


def _timeout(v: Any) -> Any:
    if _number("timeout_s", v) <= 0 or v > 3600:
        raise ValueError(f"timeout_s: expected seconds within (0, 3600], got {v!r}")
    return v


def _str(key: str) -> Any:
    def check(v: Any) -> Any:
        if not isinstance(v, str) or not v or "\0" in v:
            raise ValueError(f"{key}: expected a non-empty string, got {v!r}")
        return v
    return check


def _url(key: str) -> Any:
    def check(v: Any) -> Any:
        if not isinstance(v, str) or not re.fullmatch(r"https?://[^\s/?#]+[^\s?#]*", v):
            raise ValueError(f"{key}: expected an http(s) URL without query or fragment, got {v!r}")
        return v
    return check


def _job_ids(v: Any) -> dict[str, str]:
    if not isinstance(v, dict):
        raise ValueError("job_ids: expected a mapping of inventory job id to Slurm job id")
    out: dict[str, str] = {}
    for job, sid in v.items():
        if not isinstance(job, str) or not is_id("job", job):
            raise ValueError(f"job_ids: {job!r} is not an inventory job id")
        text = str(sid) if isinstance(sid, int) and not isinstance(sid, bool) else sid
        if not isinstance(text, str) or not _SLURM_JOB.fullmatch(text):
            raise ValueError(f"job_ids.{job}: {sid!r} is not a Slurm job id (digits, or digits_digits)")
        out[job] = text
    return out


def _verify(v: Any) -> Any:
    if not isinstance(v, bool) and not (isinstance(v, str) and v):
        raise ValueError(f"verify: expected true, false or a CA bundle path, got {v!r}")
    return v


def _namespace(v: Any) -> Any:
    if not isinstance(v, str) or not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", v):
        raise ValueError(f"namespace: expected a Kubernetes namespace (a DNS label), got {v!r}")
    return v


def _effect(v: Any) -> Any:
    if v not in EFFECTS:
        raise ValueError(f"effect: expected one of {', '.join(EFFECTS)}, got {v!r}")
    return v


def check_executor_action(kind: str, action: str) -> None:
    """ValueError unless a ``kind`` executor can carry out ``action`` (:data:`CAN`)."""
    can = CAN.get(kind)
    if can is not None and action not in can:
        raise ValueError(f"a {kind} executor cannot {action} (it can {', '.join(can)}); "
                         "give it a webhook, shell or log executor")


def _headers(v: Any) -> Any:
    if not isinstance(v, dict) or not all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()):
        raise ValueError("headers: expected a mapping of header name to string")
    return v


SETTINGS: dict[str, dict[str, Any]] = {
    "slurm": {"scontrol": _str("scontrol"), "sinfo": _str("sinfo"), "job_ids": _job_ids, "timeout_s": _timeout},
    "kubernetes": {"api_url": _url("api_url"), "token": _str("token"), "token_file": _str("token_file"),
                   "verify": _verify, "timeout_s": _timeout, "namespace": _namespace},
    "webhook": {"url": _url("url"), "headers": _headers, "timeout_s": _timeout, "effect": _effect},
    "shell": {"command": check_command, "timeout_s": _timeout, "effect": _effect},
    "log": {},
}
REQUIRED: dict[str, tuple[str, ...]] = {"kubernetes": ("api_url",), "webhook": ("url",), "shell": ("command",)}


def check_executor_setting(kind: str, key: str, v: Any) -> Any:
    """One setting of a ``kind`` executor, checked (ValueError naming it); returns the value to use."""
    valid = SETTINGS[kind]
    if key not in valid:
        raise ValueError(f"unknown setting {key!r} for a {kind} executor; valid: {', '.join(valid) or 'none'}")
    return valid[key](v)


def check_executor(kind: str, settings: dict[str, Any]) -> dict[str, Any]:
    """An executor's settings checked against its kind (ValueError naming the setting)."""
    if kind not in SETTINGS:
        raise ValueError(f"'kind' must be one of {', '.join(EXECUTOR_KINDS)}, got {kind!r}")
    out = {key: check_executor_setting(kind, key, v) for key, v in settings.items()}
    missing = [k for k in REQUIRED.get(kind, ()) if k not in out]
    if missing:
        raise ValueError(f"a {kind} executor needs {missing[0]!r}")
    return out


def parse_executors_section(file: str, node: yaml.Node) -> dict[str, ExecutorSpec]:
    """The ``executors:`` mapping: action name -> {kind, settings...}."""
    out: dict[str, ExecutorSpec] = {}
    for action, enode in _mapping(file, node, "executors").items():
        if action not in ACTIONS:
            raise _err(file, enode, f"executors: unknown action {action!r}; valid actions: {', '.join(ACTIONS)}")
        m = _mapping(file, enode, f"executors.{action}")
        if "kind" not in m:
            raise _err(file, enode, f"executors.{action}: 'kind' must be one of {', '.join(EXECUTOR_KINDS)}")
        kind = _construct(file, m["kind"])
        if kind not in EXECUTOR_KINDS:
            raise _err(file, m["kind"], f"executors.{action}: 'kind' must be one of {', '.join(EXECUTOR_KINDS)}")
        settings: dict[str, Any] = {}
        for key, vnode in m.items():
            if key == "kind":
                continue
            try:
                settings[key] = check_executor_setting(str(kind), key, _construct(file, vnode))
            except ValueError as e:
                raise _err(file, vnode, f"executors.{action}: {e}") from None
        missing = [k for k in REQUIRED.get(str(kind), ()) if k not in settings]
        if missing:
            raise _err(file, enode, f"executors.{action}: a {kind} executor needs {missing[0]!r}")
        try:
            check_executor_action(str(kind), action)
        except ValueError as e:
            raise _err(file, m["kind"], f"executors.{action}: {e}") from None
        out[action] = ExecutorSpec(str(kind), settings)
    return out
