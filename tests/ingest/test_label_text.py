"""The label-set parser's one-``findall`` path for exporters' plain label sets, and the direct join
of a key's labels as JSON, each against the general path on every text hypothesis finds: series
ids hash the JSON text, so it must be ``json.dumps``'s to the byte."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suanli.ingest import labels as lab
from suanli.ingest.labels import LabelError, parse_labels
from suanli.ingest.records import SeriesKey
from suanli.ingest.sink import labels_json

# the characters that matter to either format, with plain ones
_CHARS = st.sampled_from([*'ab_Z0 ="\\{},\n\t\x7f\x1fé\u2028😀', "\udc80"])
_TEXT = st.text(_CHARS, max_size=6)


def _general(text: str, start: int) -> tuple[dict[str, str], int] | str:
    """The pair-by-pair parser alone (the plain pattern switched off)."""
    plain, lab._PLAIN_SET = lab._PLAIN_SET, re.compile(r"(?!)")      # never matches
    try:
        return parse_labels(text, start)
    except LabelError as err:
        return str(err)
    finally:
        lab._PLAIN_SET = plain


def _fast(text: str, start: int) -> tuple[dict[str, str], int] | str:
    try:
        return parse_labels(text, start)
    except LabelError as err:
        return str(err)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "_x", "A1", "1a", ""]), _TEXT), max_size=4), _TEXT)
def test_plain_path_agrees_with_the_general_one(pairs: list[tuple[str, str]], tail: str) -> None:
    text = "m{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}" + tail
    assert _fast(text, 1) == _general(text, 1)


def test_plain_label_set_parsed_exactly() -> None:
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-001"} 55 1'
    assert parse_labels(text, 20) == ({"gpu": "0", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node-001"},
                                      text.index("}") + 1)
    assert parse_labels('m{a="1",}', 1) == ({"a": "1"}, 9)        # a trailing comma is tolerated
    assert parse_labels("m{}", 1) == ({}, 3)
    with pytest.raises(LabelError, match="duplicate label 'a'"):
        parse_labels('m{a="1",a="2"}', 1)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=4))
def test_labels_json_is_json_dumps_to_the_byte(pairs: list[tuple[str, str]]) -> None:
    key = SeriesKey("m", tuple(sorted(pairs)), None, None)
    assert labels_json(key) == json.dumps([list(p) for p in key.labels], separators=(",", ":"))


def test_labels_json_by_hand() -> None:
    key = SeriesKey("m", (("gpu", "0"), ("note", 'say "hi"'), ("t", "é")), None, None)
    assert labels_json(key) == '[["gpu","0"],["note","say \\"hi\\""],["t","\\u00e9"]]'
    assert labels_json(SeriesKey("m", (), None, None)) == "[]"
