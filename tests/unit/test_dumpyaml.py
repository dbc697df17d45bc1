"""The fast YAML reader of cluster dumps gives exactly what ``yaml.load_all`` gives with the same
loader: a table of the YAML kubectl writes and of what only the full loader reads (it falls back),
and random JSON-shaped documents in every style PyYAML writes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from everynode.product.clusterdump import _YamlLoader
from everynode.product.dumpyaml import load_documents

LOADERS = [yaml.CSafeLoader, _YamlLoader]

CASES = {
    "kubectl list": """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      node.alpha.kubernetes.io/ttl: "0"
    creationTimestamp: "2026-12-02T04:22:54Z"
    labels:
      kubernetes.io/hostname: worker-1
  spec:
    podCIDR: 10.244.1.0/24
    taints: []
  status:
    capacity: {cpu: "4", pods: "110"}
    daemonEndpoints:
      kubeletEndpoint:
        Port: 10250
kind: List
metadata:
  resourceVersion: ""
""",
    "yaml 1.1 scalars": "a: yes\nb: No\nc: on\nd: OFF\ne: ~\nf: null\ng: 0x1A\nh: 0o17\ni: 017\nj: 1_000\n"
                        "k: 1.5e3\nl: .inf\nm: -.Inf\nn: .nan\no: 190:20:30\np: true\nq: ''\nr:\ns: '012'\n",
    "timestamps": "t: 2026-12-02T04:22:54Z\nd: 2026-12-02\n",
    "block scalars": "a: |\n  line 1\n  line 2\nb: >-\n  folded\n  text\nc: \"quoted: yes\"\n",
    "several documents": "---\na: 1\n---\n---\n- x\n- 2\n...\n--- plain\n",
    "empty stream": "",
    "only a comment": "# nothing\n",
    "null and number keys": "~: a\n1: b\n1.5: c\ntrue: d\n",
    "nested sequences": "- - 1\n  - [2, 3]\n- {}\n- []\n- {a: [1, {b: c}]}\n",
    "duplicate keys": "a: 1\na: 2\n",
    "anchors and aliases": "a: &x {b: 1}\nc: *x\n",
    "merge key": "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
    "explicit tags": "a: !!str 12\nb: !!int '7'\nc: !!float 1\n",
    "non-specific tag": "a: ! 12\n",
    "binary": "a: !!binary aGVsbG8=\n",
    "complex key": "? [a, b]\n: c\n",
}


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_same_values_as_the_full_loader(text: str, loader: type[Any]) -> None:
    try:
        expected = list(yaml.load_all(text, Loader=loader))  # noqa: S506 - safe loaders
    except yaml.YAMLError:
        with pytest.raises(yaml.YAMLError):
            load_documents(text, loader=loader)
        return
    got = load_documents(text, loader=loader)
    assert got == expected
    assert [type(d) for d in got] == [type(d) for d in expected]
    assert repr(got) == repr(expected)  # types of nested values too (1 vs 1.0 vs True)


@pytest.mark.parametrize("text", ["a: [1, 2\n", "a: b: c\n", "- a\nb: c\n", "a: *nope\n", "\tx: 1\n"])
def test_broken_yaml_raises_what_the_full_loader_raises(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as full:
        list(yaml.load_all(text, Loader=_YamlLoader))  # noqa: S506 - a safe loader
    with pytest.raises(yaml.YAMLError) as fast:
        load_documents(text, loader=_YamlLoader)
    assert type(fast.value) is type(full.value) and str(fast.value) == str(full.value)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=12), st.sampled_from(["yes", "no", "on", "0x10", "1e3", "~", "null", "<<",
                                                           "2026-12-02", "12:30", "-", "'", "#", ": x"]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(docs=st.lists(json_values, min_size=1, max_size=3), flow=st.sampled_from([False, True, None]))
def test_random_documents_read_the_same(docs: list[Any], flow: bool | None) -> None:
    text = yaml.safe_dump_all(docs, default_flow_style=flow, allow_unicode=True)
    for loader in LOADERS:
        expected = list(yaml.load_all(text, Loader=loader))  # noqa: S506 - safe loaders
        assert repr(load_documents(text, loader=loader)) == repr(expected)
