"""Label and field selectors: grammar, matching, canonical strings and upstream error texts."""

from __future__ import annotations

import pytest

from everynode.api.selectors import (
    EVERYTHING,
    NOTHING,
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorError,
    escape_field_value,
    label_key_errors,
    label_selector_from_dict,
    label_value_errors,
    new_requirement,
    parse_field_selector,
    parse_label_selector,
    selecting,
    selector_from_set,
)

QNAME_RULE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
              "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
              "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
              "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")

# --- parsing and canonical form -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("   ", ""),
        ("a=b", "a=b"),
        ("a==b", "a==b"),
        ("a!=b", "a!=b"),
        ("a = b", "a=b"),
        ("a=", "a="),
        ("a!=", "a!="),
        ("x in (b,a)", "x in (a,b)"),
        ("x in (b, a, b)", "x in (a,b)"),
        ("x notin (c)", "x notin (c)"),
        ("x in ()", "x in ()"),
        ("x in (,)", "x in ()"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in (a,)", "x in (,a)"),
        ("x in (,a)", "x in (,a)"),
        ("a", "a"),
        ("!a", "!a"),
        ("  a , ! b ", "a,!b"),
        ("k>5", "k>5"),
        ("k<10", "k<10"),
        ("k>-3", None),  # -3 is not a valid label value -> error, checked below
        ("z,a=b,m", "a=b,m,z"),  # sorted by key
        ("in in (in,notin)", "in in (in,notin)"),  # keywords are identifiers in value position
        ("a=in", "a=in"),
        ("example.com/app=web", "example.com/app=web"),
        ("a\tin\t(x)", "a in (x)"),
        ("a=b,c=d\n", "a=b,c=d"),
    ],
)
def test_parse_canonical_string(text: str, canonical: str | None) -> None:
    if canonical is None:
        with pytest.raises(SelectorError):
            parse_label_selector(text)
        return
    sel = parse_label_selector(text)
    assert str(sel) == canonical
    # The canonical form parses back to the same selector.
    assert parse_label_selector(str(sel)) == sel


def test_parse_requirements_structure() -> None:
    sel = parse_label_selector("x in (b,a),!y,z")
    assert sel.requirements == (
        Requirement("x", "in", ("a", "b")),
        Requirement("y", "!", ()),
        Requirement("z", "exists", ()),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a(", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("!=a", "found '!=', expected: !, identifier, or 'end of string'"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a!==b", "unable to parse requirement: found '=', expected: identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a notin", "unable to parse requirement: found '' expected: '('"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": "
                "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("a<1.5", "unable to parse requirement: values[0]: Invalid value: \"1.5\": "
                  "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("a>99999999999999999999", "unable to parse requirement: values[0]: Invalid value: "
                                   "\"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ("a=-b-", f'unable to parse requirement: values[0][a]: Invalid value: "-b-": {VALUE_RULE}'),
        ("a/b/c=d", 'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name '
                    f"{QNAME_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
        ("A-=b", f'unable to parse requirement: <nil>: Invalid value: "A-": name part {QNAME_RULE}'),
        ("/a", 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'),
        ("x=" + "v" * 64, f'unable to parse requirement: values[0][x]: Invalid value: "{"v" * 64}": '
                          "must be no more than 63 characters"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse_label_selector(text)
    assert str(exc.value) == message


def test_parse_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        parse_label_selector("a b")


# --- matching --------------------------------------------------------------------------------

LABELS = {"app": "web", "tier": "front", "n": "7", "empty": "", "word": "abc"}


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", LABELS, True),
        ("", None, True),
        ("app=web", LABELS, True),
        ("app==web", LABELS, True),
        ("app=db", LABELS, False),
        ("missing=x", LABELS, False),
        ("empty=", LABELS, True),
        ("missing=", LABELS, False),  # = requires the key to exist
        ("app!=db", LABELS, True),
        ("app!=web", LABELS, False),
        ("missing!=x", LABELS, True),  # != matches an absent key
        ("app in (db,web)", LABELS, True),
        ("app in (db,cache)", LABELS, False),
        ("missing in (a)", LABELS, False),
        ("app notin (db)", LABELS, True),
        ("app notin (web,db)", LABELS, False),
        ("missing notin (a)", LABELS, True),
        ("app", LABELS, True),
        ("missing", LABELS, False),
        ("empty", LABELS, True),
        ("!missing", LABELS, True),
        ("!app", LABELS, False),
        ("n>5", LABELS, True),
        ("n>7", LABELS, False),
        ("n<8", LABELS, True),
        ("n<7", LABELS, False),
        ("n>-1", None, None),  # "-1" is an invalid label value: parse error (checked elsewhere)
        ("word>1", LABELS, False),  # non-integer label value never satisfies Gt/Lt
        ("word<1", LABELS, False),
        ("missing>1", LABELS, False),
        ("app=web,tier=front", LABELS, True),
        ("app=web,tier=back", LABELS, False),
        ("app=web", None, False),
        ("!app", None, True),
        ("app notin (x)", {}, True),
    ],
)
def test_label_selector_matches(text: str, labels: dict[str, str] | None, expected: bool | None) -> None:
    if expected is None:
        with pytest.raises(SelectorError):
            parse_label_selector(text)
        return
    assert parse_label_selector(text).matches(labels) is expected


def test_gt_lt_with_signed_label_values() -> None:
    # Label values are parsed like Go's strconv.ParseInt: a sign is fine, whitespace is not.
    assert parse_label_selector("n>5").matches({"n": "+6"}) is True
    assert parse_label_selector("n<5").matches({"n": "-6"}) is True
    assert parse_label_selector("n<5").matches({"n": " 4"}) is False
    assert parse_label_selector("n<5").matches({"n": "4\n"}) is False
    assert LabelSelector([new_requirement("n", "lt", ["5"])]).matches({"n": "4"}) is True


def test_everything_and_nothing() -> None:
    assert EVERYTHING.empty and EVERYTHING.matches({"a": "b"}) and EVERYTHING.matches(None)
    assert not NOTHING.empty and not NOTHING.matches({}) and not NOTHING.matches(None)
    assert NOTHING.matches_nothing and not EVERYTHING.matches_nothing
    assert str(NOTHING) == "" and str(EVERYTHING) == ""
    assert NOTHING != EVERYTHING
    assert NOTHING.add(Requirement("a", "exists")) is NOTHING
    assert parse_label_selector("") == EVERYTHING


def test_exact_value() -> None:
    sel = parse_label_selector("a=1,b==2,c in (3),d in (4,5),e!=6,f")
    assert [sel.exact_value(k) for k in "abcdefg"] == ["1", "2", "3", None, None, None, None]


def test_selectors_are_hashable_and_comparable() -> None:
    assert parse_label_selector("b=2,a=1") == parse_label_selector("a=1, b=2")
    assert len({parse_label_selector("a=1,b=2"), parse_label_selector("b=2,a=1")}) == 1


def test_selector_from_set() -> None:
    assert selector_from_set(None) == EVERYTHING
    assert selector_from_set({}) == EVERYTHING
    sel = selector_from_set({"b": "2", "a": "1"})
    assert str(sel) == "a=1,b=2"
    assert sel.matches({"a": "1", "b": "2", "c": "3"}) and not sel.matches({"a": "1"})


# --- metav1.LabelSelector dicts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("sel", "canonical", "labels", "expected"),
    [
        (None, "", {"a": "b"}, False),  # nil -> nothing
        ({}, "", {"a": "b"}, True),  # {} -> everything
        ({"matchLabels": {}, "matchExpressions": []}, "", {}, True),
        ({"matchLabels": {"app": "web"}}, "app=web", {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, "app=web", {"app": "db"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
         "tier in (a,b)", {"tier": "a"}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
         "tier notin (a)", {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, "tier", {"tier": ""}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, "!tier", {"tier": ""}, False),
        ({"matchLabels": {"z": "1"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]},
         "a,z=1", {"z": "1"}, False),
        ({"matchLabels": {"z": "1"}, "matchExpressions": [{"key": "a", "operator": "Exists"}]},
         "a,z=1", {"z": "1", "a": "x"}, True),
    ],
)
def test_label_selector_from_dict(sel: dict | None, canonical: str, labels: dict, expected: bool) -> None:
    s = label_selector_from_dict(sel)
    assert str(s) == canonical
    assert s.matches(labels) is expected


@pytest.mark.parametrize(
    ("sel", "message"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
         '"Gt" is not a valid pod selector operator'),
        ({"matchExpressions": [{"key": "a", "operator": "in", "values": ["1"]}]},
         '"in" is not a valid pod selector operator'),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]},
         "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
         'values: Invalid value: ["x"]: values set must be empty for exists and does not exist'),
        ({"matchLabels": {"a b": "c"}},
         f'key: Invalid value: "a b": name part {QNAME_RULE}'),
        ({"matchLabels": {"a": "-c"}}, f'values[0][a]: Invalid value: "-c": {VALUE_RULE}'),
        ({"matchLabels": {"a b": "-c"}},
         f'[key: Invalid value: "a b": name part {QNAME_RULE}, values[0][a b]: Invalid value: "-c": {VALUE_RULE}]'),
    ],
)
def test_label_selector_from_dict_errors(sel: dict, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        label_selector_from_dict(sel)
    assert str(exc.value) == message


# --- requirements and validation helpers -----------------------------------------------------


@pytest.mark.parametrize(
    ("key", "op", "values", "message"),
    [
        ("a", "=", ["1", "2"], 'values: Invalid value: ["1","2"]: exact-match compatibility requires one single value'),
        ("a", "gt", ["1", "2"], 'values: Invalid value: ["1","2"]: for \'Gt\', \'Lt\' operators, exactly one value is required'),
        ("a", "~", [], 'operator: Unsupported value: "~": supported values: "in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"'),
    ],
)
def test_new_requirement_errors(key: str, op: str, values: list[str], message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        new_requirement(key, op, values)
    assert str(exc.value) == message
    assert exc.value.errors


def test_new_requirement_path_prefix() -> None:
    with pytest.raises(SelectorError) as exc:
        new_requirement("a", "gt", ["x"], path="spec.matchExpressions[0]")
    assert str(exc.value).startswith("spec.matchExpressions[0].values[0]: Invalid value")


@pytest.mark.parametrize(
    ("key", "ok"),
    [("a", True), ("A.b-c_d", True), ("example.com/a", True), ("a" * 63, True), ("a" * 64, False),
     ("", False), ("-a", False), ("a-", False), ("Example.com/a", False), ("a/b/c", False), ("/a", False),
     ("a/", False), ("a b", False), ("a\n", False)],
)
def test_label_key_errors(key: str, ok: bool) -> None:
    assert (label_key_errors(key) == []) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [("", True), ("a", True), ("a.b_c-d", True), ("1", True), ("a" * 63, True), ("a" * 64, False),
     ("-a", False), ("a_", False), ("a b", False), ("a/b", False), ("a\n", False)],
)
def test_label_value_errors(value: str, ok: bool) -> None:
    assert (label_value_errors(value) == []) is ok


# --- field selectors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "requirements", "canonical"),
    [
        ("", (), ""),
        (",", (), ""),
        ("metadata.name=a", (("metadata.name", "=", "a"),), "metadata.name=a"),
        ("metadata.name==a", (("metadata.name", "=", "a"),), "metadata.name=a"),
        ("status.phase!=Failed", (("status.phase", "!=", "Failed"),), "status.phase!=Failed"),
        ("a!=", (("a", "!=", ""),), "a!="),
        ("a=", (("a", "=", ""),), "a="),
        # terms arrive in any order (kubectl 1.27 uses Go map order); they are sorted
        ("status.phase!=Succeeded,spec.nodeName=n1,status.phase!=Failed",
         (("spec.nodeName", "=", "n1"), ("status.phase", "!=", "Failed"), ("status.phase", "!=", "Succeeded")),
         "spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded"),
        ("a=b,,c=d", (("a", "=", "b"), ("c", "=", "d")), "a=b,c=d"),
        ("a=!x", (("a", "=", "!x"),), "a=!x"),  # the leftmost operator splits
        ("a=b\\,c", (("a", "=", "b,c"),), "a=b\\,c"),
        ("a=b\\=c", (("a", "=", "b=c"),), "a=b\\=c"),
        ("a=b\\\\", (("a", "=", "b\\"),), "a=b\\\\"),
        ("involvedObject.namespace=", (("involvedObject.namespace", "=", ""),), "involvedObject.namespace="),
    ],
)
def test_parse_field_selector(text: str, requirements: tuple, canonical: str) -> None:
    sel = parse_field_selector(text)
    assert sel.requirements == requirements
    assert str(sel) == canonical
    assert sel.empty is (not requirements)
    assert parse_field_selector(str(sel)) == sel


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a!==b", "invalid field selector: unescaped character in value: 61"),
        ("a=b\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_parse_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        parse_field_selector(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("text", "fields", "expected"),
    [
        ("", {}, True),
        ("metadata.name=a", {"metadata.name": "a"}, True),
        ("metadata.name=a", {"metadata.name": "b"}, False),
        ("metadata.name=", {}, True),  # a missing field reads as ""
        ("metadata.name!=a", {}, True),
        ("metadata.name!=", {}, False),
        ("spec.nodeName=n1,status.phase!=Failed", {"spec.nodeName": "n1", "status.phase": "Running"}, True),
        ("spec.nodeName=n1,status.phase!=Failed", {"spec.nodeName": "n1", "status.phase": "Failed"}, False),
        ("spec.nodeName=n1,status.phase!=Failed", {"spec.nodeName": "n2", "status.phase": "Running"}, False),
    ],
)
def test_field_selector_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert parse_field_selector(text).matches(fields) is expected


def test_field_selector_exact_value() -> None:
    sel = parse_field_selector("status.phase!=Failed,metadata.name==x,spec.nodeName=n")
    assert sel.exact_value("metadata.name") == "x"
    assert sel.exact_value("spec.nodeName") == "n"
    assert sel.exact_value("status.phase") is None
    assert sel.exact_value("other") is None
    assert FieldSelector().exact_value("metadata.name") is None


def test_field_selector_transform() -> None:
    sel = parse_field_selector("spec.host=n1").transform(lambda f, v: ("spec.nodeName", v))
    assert sel.requirements == (("spec.nodeName", "=", "n1"),)


@pytest.mark.parametrize("value", ["plain", "a,b", "a=b", "a\\b", "\\,=", ""])
def test_escape_round_trip(value: str) -> None:
    assert parse_field_selector("f=" + escape_field_value(value)).exact_value("f") == value


def test_selecting_is_upstreams_controller_lookup_by_labels():
    """``GetPodDaemonSets``/``GetPodReplicaSets``: no labels → no controller (even for a selector
    of DoesNotExist terms that an empty label set satisfies); an empty or missing selector
    selects nothing."""
    absent = label_selector_from_dict({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]})
    app = label_selector_from_dict({"matchLabels": {"app": "a"}})
    candidates = {"absent": absent, "app": app, "empty": label_selector_from_dict({}), "none": None}
    assert selecting(candidates, None, candidates.get) == []
    assert selecting(candidates, {}, candidates.get) == []
    assert selecting(candidates, {"app": "a"}, candidates.get) == ["absent", "app"]
    assert selecting(candidates, {"x": "1"}, candidates.get) == []
