"""The direct record emitter writes exactly what libyaml writes through PyYAML, or declines."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capplan.trials.run_folder import record_emitter
from capplan.trials.run_folder.record_emitter import emit_records_yaml
from capplan.trials.run_folder.record_yaml import dump_records_yaml
from tests.mode_switch import mode

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML built without libyaml")


def _libyaml(data: Any) -> str:
    text: str = yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=120)
    return text


def _same(data: Any) -> None:
    out = emit_records_yaml(data)
    assert out is not None, "declined a document it should write"
    assert out == _libyaml(data)


# every class of character libyaml's scalar analysis tells apart: spaces (often, so that lines fold),
# line breaks of each kind, the non-printable, the indicators, quotes, non-ASCII in and out of the BMP
_ALPHABET = st.sampled_from(
    list("abcxyz019_") + [" "] * 8 + ["\n", "\n", "\r", "\x85", "\u2028", "\u2029", "\t", "\x00", "\x07", "\x1b",
                                      "\x7f", "\x9f", "\xa0", "\xe9", "\u4e2d", "\ufeff", "\ufffe", "\U0001f642"]
    + list("'\"\\#,[]{}&*!|>%@`?:-.=<~/"))
_TEXT = st.text(_ALPHABET, max_size=40) | st.text(_ALPHABET, min_size=100, max_size=400)
_WORDS = st.lists(st.sampled_from(["yes", "null", "1.5", "word", "a: b", "#x", "- y", "it's", "~", "0x1F", "",
                                   "2024-01-01", "<<", "=", "...", "---"]), min_size=1, max_size=30).map(" ".join)
_KEY = st.text(st.sampled_from(list("abc_ 1:-#'\"\t\xe9\U0001f642")), max_size=30) | st.sampled_from(
    ["role", "content", "", "null", "1", "true", "a: b", "- x", "?", "x" * 128])
_SCALAR = (st.none() | st.booleans() | st.integers() | st.floats() | _TEXT | _WORDS)
_TREE = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEY, inner, max_size=4),
                     max_leaves=24)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEY, _TREE, max_size=6))
def test_generated_documents_are_written_as_libyaml_writes_them(data: dict[str, Any]) -> None:
    _same(data)


# a fold happens at a single space once the line is past 120 columns: every column around the edge,
# at several depths, for each style
_STYLES = {"plain": "", "single-quoted": "'", "double-quoted": "\t"}


@pytest.mark.parametrize("style", sorted(_STYLES))
@pytest.mark.parametrize("depth", [0, 1, 3])
def test_folding_at_every_column_near_the_width(style: str, depth: int) -> None:
    for key_length in range(1, 6):
        for first in range(100, 126):
            for gap in (" ", "  ", "   "):
                value = _STYLES[style] + "x" * first + gap + "y" * 30 + " z" + gap + "w" * 130 + " v"
                data: dict[str, Any] = {"k" * key_length: value, "list": [value, [value]]}
                for _ in range(depth):
                    data = {"nest": data, "items": [copy.deepcopy(data)]}
                _same(data)


@pytest.mark.parametrize("value", [
    "", " ", "a ", " a", "a  b", "---", "--- x", "...", "- a", "-a", "-", ":", "a:b", "a: b", "a:", "a #b", "a#b",
    "#a", "?a", "? a", "?", "null", "~", "Null", "true", "yes", "off", "1", "0x1", "1.5", ".inf", "=", "<<", "it's",
    "a\nb", "a\n\nb", "a\n", "\na", "a \nb", "a\n b", "a\r\nb", "\t", "a\tb", "a\u2028b", "a\u2029\u2029b", "\x85",
    "\ufeff", "\U0001f642", "\xe9t\xe9", "\x00", "\x7f", "\\", '"', "'", "a'b'c", '"q"', "@x", "`x", "%x", "!x",
    "&x", "*x", "|", ">", "{", "}", "[", "]", ",", "a,b", "a[b]", "a{b}",
    "multi line\ntext with 'quotes' and a long enough line to fold " + "word " * 30 + "\nend\n",
])
def test_edge_scalars_as_values_keys_and_items(value: str) -> None:
    _same({"v": value, "seq": [value, {"k": value}], "nested": {"deeper": {"v": value}}})
    if "\n" not in value and "\r" not in value and "\x85" not in value and "\u2028" not in value \
            and "\u2029" not in value:
        _same({value: 1, "after": {value: [value]}})


def test_layout_of_containers() -> None:
    _same({"empty_map": {}, "empty_list": [], "list_of_lists": [[1, [2, []]], [], [{}]],
           "maps_in_list": [{"a": 1, "b": {"c": [1, 2]}}, {"d": []}], "deep": {"a": {"b": {"c": [{"d": {"e": 1}}]}}}})
    assert emit_records_yaml({}) == _libyaml({})
    assert emit_records_yaml({"a": [], "b": {}}) == "a: []\nb: {}\n"


@pytest.mark.parametrize("data", [
    {"k": (1, 2)}, {1: "int key"}, {None: "null key"}, {"multi\nline key": 1}, {"k" * 129: 1},
    {"\xe9" * 65: 1}, {"k": {"x"}}, {"k": b"bytes"}, {"k": "lone \ud800 surrogate\t"},
])
def test_declines_what_pyyaml_must_write(data: dict[Any, Any]) -> None:
    assert emit_records_yaml(data) is None


def test_declines_a_container_seen_twice_and_deep_nesting() -> None:
    shared: list[int] = [1]
    assert emit_records_yaml({"a": shared, "b": shared}) is None
    deep: dict[str, Any] = {"x": 1}
    for _ in range(record_emitter.MAX_DEPTH + 1):
        deep = {"x": deep}
    assert emit_records_yaml(deep) is None
    assert dump_records_yaml(deep) == _libyaml(deep).encode("utf-8")  # written by PyYAML instead


def test_not_a_mapping_is_declined() -> None:
    assert emit_records_yaml(["a"]) is None
    assert emit_records_yaml("a") is None


class _Text(str):
    pass


def test_subclasses_are_declined() -> None:
    assert emit_records_yaml({"k": _Text("v")}) is None
    assert emit_records_yaml({_Text("k"): "v"}) is None


def test_the_records_dumper_uses_it_and_writes_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"messages": [{"role": "user", "content": "hello " * 50}], "n": 1}
    expected = _libyaml(data).encode("utf-8")
    calls: list[Any] = []

    def declining(value: Any) -> None:
        calls.append(value)

    with mode(False):
        assert dump_records_yaml(data) == expected
        monkeypatch.setattr("capplan.trials.run_folder.record_yaml.emit_records_yaml", declining)
        assert dump_records_yaml(data) == expected  # declined: PyYAML writes it
        assert calls == [data]
    calls.clear()
    with mode(True):
        assert dump_records_yaml(data) == expected
    assert calls == []  # the reference mode leaves it out


@pytest.mark.parametrize("separator", ["\n", "\n\n", "\u2028", "\n\u2029\n"])
def test_long_multi_line_text_as_messages_carry_it(separator: str) -> None:
    # paragraphs of prose, some lines far past the width, quotes to double: the shape of a model's answer
    words = ["the", "order", "it's", "refund", "'quoted'", "a", "flight", "x" * 130, "ok."]
    lines = [" ".join(words[(i * 7 + j) % len(words)] for j in range(3 + i % 40)) for i in range(60)]
    text = separator.join(lines)
    _same({"messages": [{"role": "assistant", "content": text}, {"role": "user", "content": text + separator}],
           "deep": {"a": {"b": [{"content": text}]}}})


def test_the_escape_table_is_the_complement_of_the_printable_class() -> None:
    escaped = {code for code in (*range(0xD800), *range(0xE000, 0x10000))
               if record_emitter._DOUBLE_ESCAPED.match(chr(code))}
    assert set(record_emitter._BASIC_ESCAPES) == escaped


@pytest.mark.parametrize("text", [
    " " * 5000, "a" + " " * 5000 + "b", ("word " * 30 + "   ") * 200, "\t" * 5000, ("x\t" * 60 + " ") * 100,
    "\n" * 3000, ("line\n\n\n" * 500), "\x00\x01\x7f\x85" * 2000, "\U0001f642 " * 3000, ("\u2028 x" * 500),
])
def test_long_runs_of_what_a_hostile_provider_may_send(text: str) -> None:
    _same({"content": text, "nested": [{"content": text}]})


def test_a_document_with_more_text_than_the_bound_is_left_to_pyyaml() -> None:
    half = "word " * (record_emitter.MAX_TEXT // 10)
    assert emit_records_yaml({"a": half, "b": half}) is not None
    over = {"a": half, "b": half, "c": "x" * 10}
    assert emit_records_yaml(over) is None
    assert dump_records_yaml(over) == _libyaml(over).encode("utf-8")


def test_a_smaller_text_bound_counts_every_string_value_and_item() -> None:
    document = {"a": "x" * 10, "b": ["y" * 5, {"c": "z" * 5}], "n": 3}  # 20 characters of text; keys not counted
    assert emit_records_yaml(document, 20) == dump_records_yaml(document).decode("utf-8")
    assert emit_records_yaml(document, 19) is None
    assert emit_records_yaml(document, record_emitter.MAX_TEXT * 2) == emit_records_yaml(document)  # capped


@pytest.mark.parametrize("value", [0.0, -0.0, 0.1, 100.0, 1e16, 1e17, -1e17, 1e-05, 1.5e-07, 5e-324, 2.5e-308,
                                   1.7976931348623157e308, 123456789012345678.0, float("nan"), float("inf"),
                                   float("-inf"), 3.0000000000000004, -2.5])
def test_floats_are_spelled_as_pyyaml_spells_them(value: float) -> None:
    _same({"value": value, "items": [value, {"nested": value}]})
