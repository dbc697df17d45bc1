"""ControllerRevision hashing, data bytes and bookkeeping (daemonset-semantics.md §7)."""

from __future__ import annotations

import orjson
import pytest

from everynode.controllers.daemonset.history import (
    compute_hash,
    construct_history,
    fnv1a_32,
    matches,
    new_revision,
    pick_current,
    revision_data,
    revisions_to_delete,
    safe_encode,
    split_revisions,
)


def make_ds(image="nginx:1", *, annotations=None, name="ds", template_extra=None):
    template = {"metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": image}], "restartPolicy": "Always"}}
    if template_extra:
        template["spec"].update(template_extra)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "default", "uid": "uid-1", "generation": 1,
                         "annotations": annotations or {}},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template,
                     "revisionHistoryLimit": 10}}


@pytest.mark.parametrize("data,expected", [
    (b"", 0x811C9DC5),
    (b"a", 0xE40C292C),
    (b"foobar", 0xBF9CF968),
])
def test_fnv1a_32_reference_vectors(data, expected):
    assert fnv1a_32(data) == expected


@pytest.mark.parametrize("text,expected", [
    ("0123456789", "456789bcdf"),
    ("4294967295", "86f8fbc6f9"),
])
def test_safe_encode_digit_map(text, expected):
    assert safe_encode(text) == expected


def test_hash_alphabet_and_collision_count():
    template = make_ds()["spec"]["template"]
    h0 = compute_hash(template, None)
    h1 = compute_hash(template, 1)
    assert 1 <= len(h0) <= 10 and set(h0) <= set("456789bcdf")
    assert h0 != h1 != compute_hash(template, 2)
    assert compute_hash(template, None) == h0  # deterministic
    assert compute_hash(make_ds("nginx:2")["spec"]["template"], None) != h0


def test_hash_ignores_key_order_and_go_zero_values():
    a = {"metadata": {"labels": {"b": "1", "a": "2"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    b = {"spec": {"containers": [{"image": "i", "name": "c", "resources": {}}]},
         "metadata": {"creationTimestamp": None, "labels": {"a": "2", "b": "1"}}}
    assert compute_hash(a, None) == compute_hash(b, None)


def test_revision_data_is_go_json():
    ds = make_ds(template_extra={"nodeSelector": {"a": "<&>"}})
    data = revision_data(ds)
    assert data.startswith(b'{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,'
                           b'"labels":{"app":"x"}},"spec":{"containers":[{"image":"nginx:1","name":"c",'
                           b'"resources":{}}],')
    assert b"\\u003c\\u0026\\u003e" in data
    assert b" " not in data
    assert data == revision_data(orjson.loads(orjson.dumps(ds)))


def test_match_is_byte_equality_of_data():
    ds = make_ds()
    rev = new_revision(ds, compute_hash(ds["spec"]["template"], None), 1, revision_data(ds))
    assert matches(ds, rev)
    assert not matches(make_ds("nginx:2"), rev)
    # an explicit creationTimestamp: null (as a rollback patch leaves it) is the same template
    rolled = make_ds()
    rolled["spec"]["template"]["metadata"]["creationTimestamp"] = None
    assert matches(rolled, rev)


def test_new_revision_shape():
    ds = make_ds(annotations={"kubernetes.io/change-cause": "v1", "deprecated.daemonset.template.generation": "1"})
    rev = new_revision(ds, "5d8f", 3, revision_data(ds))
    assert rev["metadata"]["name"] == "ds-5d8f"
    assert rev["metadata"]["labels"] == {"app": "x", "controller-revision-hash": "5d8f"}
    assert rev["metadata"]["annotations"] == ds["metadata"]["annotations"]
    assert rev["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                                   "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}]
    assert rev["revision"] == 3
    assert rev["data"]["spec"]["template"]["$patch"] == "replace"


def _rev(name, number, hash_=None, ds=None):
    ds = ds or make_ds(name)
    rev = new_revision(ds, hash_ or name, number, revision_data(ds))
    rev["metadata"]["name"] = name
    rev["metadata"]["uid"] = "uid-" + name
    return rev


def test_split_and_pick_current():
    current_ds = make_ds("v2")
    r1, r2, r3 = _rev("a", 1), _rev("b", 2, ds=current_ds), _rev("c", 5, ds=current_ds)
    cur, old = split_revisions(current_ds, [r1, r2, r3])
    assert cur == [r2, r3] and old == [r1]
    assert pick_current([r2, r3]) is r3
    tie = _rev("d", 5, ds=current_ds)
    assert pick_current([r3, tie]) is tie  # ties: the later one


@pytest.mark.parametrize("numbers,limit,live,expected", [
    ([1, 2, 3], 10, set(), []),
    ([1, 2, 3], 1, set(), ["r1", "r2"]),
    ([3, 1, 2], 1, set(), ["r1", "r2"]),
    ([1, 2, 3], 1, {"r1"}, ["r2", "r3"]),     # in-use hash skipped, next oldest taken
    ([1, 2, 3], 0, {"r1", "r2", "r3"}, []),   # all in use: more than limit remain
    ([1, 2, 3], 0, set(), ["r1", "r2", "r3"]),
])
def test_revisions_to_delete(numbers, limit, live, expected):
    old = [_rev(f"r{n}", n) for n in numbers]
    assert [r["metadata"]["name"] for r in revisions_to_delete(old, limit, live)] == expected


class FakeClient:
    """Records writes; enough of the Client interface for construct_history."""

    def __init__(self):
        self.calls = []
        self.objects = {}

    async def create(self, resource, obj, *, namespace=None, **_):
        self.calls.append(("create", resource, obj["metadata"]["name"]))
        stored = orjson.loads(orjson.dumps(obj))
        stored["metadata"]["uid"] = "uid-" + obj["metadata"]["name"]
        self.objects[obj["metadata"]["name"]] = stored
        return stored

    async def update(self, resource, obj, **_):
        self.calls.append(("update", resource, obj["metadata"]["name"], obj.get("revision")))
        return obj

    async def patch(self, resource, name, patch, **_):
        self.calls.append(("patch", resource, name, patch))
        return {}

    async def delete(self, resource, name, **_):
        self.calls.append(("delete", resource, name))
        return {}


async def test_construct_history_creates_first_revision():
    client = FakeClient()
    ds = make_ds()
    cur, old = await construct_history(client, ds, [], daemon_pods=list)
    assert old == []
    assert cur["revision"] == 1
    assert cur["metadata"]["name"] == f"ds-{compute_hash(ds['spec']['template'], None)}"


async def test_construct_history_renumbers_on_rollback():
    """Revisions 1 (v1), 2 (v2), 3 (v3); the DS goes back to v2 → revision "2" becomes 4."""
    client = FakeClient()
    revs = [_rev("r1", 1, ds=make_ds("v1")), _rev("r2", 2, ds=make_ds("v2")), _rev("r3", 3, ds=make_ds("v3"))]
    cur, old = await construct_history(client, make_ds("v2"), revs, daemon_pods=list)
    assert client.calls == [("update", "controllerrevisions.apps", "r2", 4)]
    assert cur["revision"] == 4 and cur["metadata"]["name"] == "r2"
    assert [r["metadata"]["name"] for r in old] == ["r1", "r3"]


async def test_construct_history_labels_revisions_without_hash_label_with_their_name():
    client = FakeClient()
    rev = _rev("legacy", 1, ds=make_ds("v1"))
    del rev["metadata"]["labels"]["controller-revision-hash"]
    await construct_history(client, make_ds("v1"), [rev], daemon_pods=list)
    assert client.calls[0][:3] == ("update", "controllerrevisions.apps", "legacy")


async def test_construct_history_dedupes_and_relabels_pods():
    client = FakeClient()
    ds = make_ds("v1")
    a, b = _rev("a", 1, hash_="ha", ds=ds), _rev("b", 2, hash_="hb", ds=ds)
    pods = [{"metadata": {"name": "p1", "labels": {"controller-revision-hash": "ha"}}},
            {"metadata": {"name": "p2", "labels": {"controller-revision-hash": "hb"}}},
            {"metadata": {"name": "p3", "labels": {"controller-revision-hash": "old"}}}]
    cur, _ = await construct_history(client, ds, [a, b], daemon_pods=lambda: pods)
    assert cur is b
    assert ("patch", "pods", "p1", {"metadata": {"labels": {"controller-revision-hash": "hb"}}}) in client.calls
    assert ("patch", "pods", "p3", {"metadata": {"labels": {"controller-revision-hash": "hb"}}}) in client.calls
    assert not any(c[0] == "patch" and c[2] == "p2" for c in client.calls)
    assert ("delete", "controllerrevisions.apps", "a") in client.calls
