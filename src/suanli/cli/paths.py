"""Every file a verb writes is checked alike, before any data is read: its parent directory must
exist (a typo in a path is never turned into a new directory tree), and its format comes from its
suffix, or the path is refused with one line that names the formats accepted."""

from __future__ import annotations

from pathlib import Path

from suanli.errors import InputError

__all__ = ["output_format"]


def output_format(flag: str, path: Path, formats: dict[str, str]) -> str:
    """The format (a value of ``formats``, keyed by lower-case suffix) of the file ``flag`` names."""
    fmt = formats.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(formats))
        raise InputError(f"{flag} {path}: the file name must end in one of {known} (the format comes from it)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: directory {parent} does not exist (create it first)")
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a directory")
    return fmt
