"""YAML read as a node tree, so every error names the file and the line (rule files, serve config).

>>> compose("a: [1, 2]", "x.yaml").value[0][0].value
'a'
"""

from __future__ import annotations

import yaml

from suanli.errors import InputError

__all__ = ["NodeReader", "compose"]


def compose(text: str, source: str) -> yaml.Node | None:
    """The document's node tree (None for an empty one); a syntax error is an InputError at its line."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise InputError(f"YAML syntax error: {e.problem or e.context}", file=source,
                         line=mark.line + 1 if mark else None) from None


class NodeReader:
    """Typed reads of one document's nodes; each error is an InputError at the node's line."""

    def __init__(self, file: str) -> None:
        self.file = file

    def err(self, node: yaml.Node | None, what: str) -> InputError:
        line = node.start_mark.line + 1 if node is not None else None
        return InputError(what, file=self.file, line=line)

    def seq(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.err(node, f"{what}: expected a list")
        return list(node.value)
