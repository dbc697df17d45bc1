"""go_json reproduces Go's encoding/json.Marshal bytes (rollout undo byte-compares them)."""

from __future__ import annotations

import pytest

from everynode.api.gojson import format_float, go_json


@pytest.mark.parametrize("value, expected", [
    ({}, b"{}"),
    ([], b"[]"),
    (None, b"null"),
    ({"b": 1, "a": {"d": True, "c": False}}, b'{"a":{"c":false,"d":true},"b":1}'),
    ({"s": "<a href='x'>&</a>"}, b'{"s":"\\u003ca href=\'x\'\\u003e\\u0026\\u003c/a\\u003e"}'),
    ("line\u2028para\u2029", b'"line\\u2028para\\u2029"'),
    ("tab\tnl\ncr\rq\"bs\\", b'"tab\\tnl\\ncr\\rq\\"bs\\\\"'),
    ("\x01\x1f\b\f\x7f", b'"\\u0001\\u001f\\b\\f\x7f"'),
    ("caf\u00e9 \u65e5", "\"caf\u00e9 \u65e5\"".encode()),
    # written as they are (gojson.verbatim), and one of each character that is not
    ({"ip": "10.244.0.2", "name": "agent-x7k2q", "": "a b:c/d"}, b'{"":"a b:c/d","ip":"10.244.0.2","name":"agent-x7k2q"}'),
    (["a<b", "a>b", "a&b"], b'["a\\u003cb","a\\u003eb","a\\u0026b"]'),
    (["a\"b", "a\\b", "a\x7fb", "a\nb", "\u00e9"], '["a\\"b","a\\\\b","a\x7fb","a\\nb","\u00e9"]'.encode()),
    ("\ud800", b'"\xef\xbf\xbd"'),
    ([1, 2.0, -0.5, 1e21, 1e-7], b"[1,2,-0.5,1e+21,1e-7]"),
    ({"metadata": {"creationTimestamp": None, "labels": {"app": "x"}}},
     b'{"metadata":{"creationTimestamp":null,"labels":{"app":"x"}}}'),
])
def test_go_json(value, expected):
    assert go_json(value) == expected


@pytest.mark.parametrize("f, text", [
    (0.0, "0"), (1.0, "1"), (100.0, "100"), (0.1, "0.1"), (1e20, "100000000000000000000"),
    (123456789012345678.0, "123456789012345680"), (1e-6, "0.000001"), (1.5e-6, "0.0000015"),
    (9.9e-7, "9.9e-7"), (1e21, "1e+21"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (5e-324, "5e-324"), (-2.5e-8, "-2.5e-8"),
])
def test_format_float_like_go(f, text):
    assert format_float(f) == text


def test_keys_sorted_by_code_point_at_every_level():
    assert go_json({"b": [{"z": 1, "Z": 2}], "B": 0, "a": 0}) == b'{"B":0,"a":0,"b":[{"Z":2,"z":1}]}'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1, 2}, object()])
def test_unsupported_values_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        go_json([bad])
