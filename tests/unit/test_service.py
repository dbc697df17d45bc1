"""ApiService semantics without HTTP: what kube-apiserver does between decoding and encoding."""

from __future__ import annotations

import pytest

from everynode.api.errors import ApiError
from everynode.api.registry import resource
from everynode.apiserver.registry.decode import drop_path as _drop_path
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

PODS = resource("pods")
NODES = resource("nodes")
NAMESPACES = resource("namespaces")
DAEMONSETS = resource("daemonsets.apps")
LEASES = resource("leases.coordination.k8s.io")
SERVICES = resource("services")
PRIORITY_CLASSES = resource("priorityclasses.scheduling.k8s.io")
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


class FixedClock(Clock):
    def __init__(self, t: float = 1_767_225_600.0):  # 2026-01-01T00:00:00Z
        self.t = t

    def now(self) -> float:
        return self.t


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
async def api(clock: FixedClock) -> ApiService:
    service = ApiService(MemoryStore(), clock=clock)
    await service.start()
    return service


def opts(**kw) -> RequestOptions:
    return RequestOptions(**kw)


def daemonset(name: str = "ds", image: str = "img:1", **spec) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": image}]}},
            **spec,
        },
    }


def pod(name: str = "p", namespace: str = "default", **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "img"}], **spec}}


async def error_of(coro) -> ApiError:
    with pytest.raises(ApiError) as info:
        await coro
    return info.value


# -- start-up --------------------------------------------------------------------------------------


async def test_seeds_namespaces_priority_classes_and_kubernetes_service(api: ApiService):
    names = [ns["metadata"]["name"] for ns in (await api.list(NAMESPACES, None))["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert all(ns["status"]["phase"] == "Active" for ns in (await api.list(NAMESPACES, None))["items"])
    node_critical = await api.get(PRIORITY_CLASSES, "", "system-node-critical")
    assert node_critical["value"] == 2000001000
    assert (await api.get(PRIORITY_CLASSES, "", "system-cluster-critical"))["value"] == 2000000000
    svc = await api.get(SERVICES, "default", "kubernetes")
    assert svc["spec"]["clusterIP"] == "10.96.0.1"


async def test_start_is_idempotent_on_a_store_that_has_the_seeds(clock: FixedClock):
    store = MemoryStore()
    await ApiService(store, clock=clock).start()
    rv = store.current_rv()
    await ApiService(store, clock=clock).start()
    assert store.current_rv() == rv


# -- create ----------------------------------------------------------------------------------------


async def test_create_sets_system_metadata_and_resets_status(api: ApiService):
    body = daemonset()
    body["status"] = {"numberReady": 7}
    ds = await api.create(DAEMONSETS, "default", body, opts=opts())
    md = ds["metadata"]
    assert ds["kind"] == "DaemonSet" and ds["apiVersion"] == "apps/v1"
    assert md["uid"] and md["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert md["generation"] == 1
    assert md["annotations"][TEMPLATE_GENERATION] == "1"
    assert ds["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                            "desiredNumberScheduled": 0, "numberReady": 0}
    assert md["resourceVersion"].isdigit()
    assert "selfLink" not in md
    assert md["managedFields"][0]["manager"] == "unknown"


async def test_create_generate_name(api: ApiService):
    body = pod()
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "web-"
    created = await api.create(PODS, "default", body, opts=opts())
    name = created["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5


async def test_create_pod_status_generation_and_admission(api: ApiService):
    created = await api.create(PODS, "default", pod(), opts=opts())
    assert created["metadata"]["generation"] == 1
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    spec = created["spec"]
    assert spec["serviceAccountName"] == "default" and spec["serviceAccount"] == "default"
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
    ]


@pytest.mark.parametrize("tolerations, added", [
    ([{"operator": "Exists"}], 0),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}], 1),
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}], 1),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}], 2),
])
async def test_default_toleration_seconds(api: ApiService, tolerations, added):
    created = await api.create(PODS, "default", pod(tolerations=tolerations), opts=opts())
    assert len(created["spec"]["tolerations"]) == len(tolerations) + added


@pytest.mark.parametrize("resources, qos", [
    ({}, "BestEffort"),
    ({"requests": {"cpu": "100m"}}, "Burstable"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
])
async def test_pod_qos_class(api: ApiService, resources, qos):
    body = pod()
    body["spec"]["containers"][0]["resources"] = resources
    created = await api.create(PODS, "default", body, opts=opts())
    assert created["status"]["qosClass"] == qos


async def test_priority_class_resolution(api: ApiService):
    created = await api.create(PODS, "default", pod(priorityClassName="system-node-critical"), opts=opts())
    assert created["spec"]["priority"] == 2000001000
    assert created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


async def test_unknown_priority_class_is_forbidden(api: ApiService):
    e = await error_of(api.create(PODS, "default", pod(name="x", priorityClassName="nope"), opts=opts()))
    assert e.code == 403 and e.reason == "Forbidden"
    assert e.message == 'pods "x" is forbidden: no PriorityClass with name nope was found'


async def test_priority_value_in_spec_must_match_class(api: ApiService):
    e = await error_of(api.create(PODS, "default", pod(name="x", priorityClassName="system-node-critical",
                                                       priority=5), opts=opts()))
    assert e.code == 403
    assert "the integer value of priority (5) must not be provided in pod spec; priority admission " \
           "controller computed 2000001000 from the given PriorityClass name" in e.message


async def test_global_default_priority_class_applies_and_is_unique(api: ApiService):
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"},
          "value": 10, "globalDefault": True}
    await api.create(PRIORITY_CLASSES, "", pc, opts=opts())
    created = await api.create(PODS, "default", pod(), opts=opts())
    assert created["spec"]["priorityClassName"] == "low" and created["spec"]["priority"] == 10
    other = dict(pc, metadata={"name": "low2"})
    e = await error_of(api.create(PRIORITY_CLASSES, "", other, opts=opts()))
    assert e.code == 403 and "PriorityClass low is already marked as default" in e.message


async def test_create_existing_is_already_exists(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    e = await error_of(api.create(DAEMONSETS, "default", daemonset(), opts=opts()))
    assert e.code == 409 and e.reason == "AlreadyExists"
    assert e.message == 'daemonsets.apps "ds" already exists'
    assert e.status["details"] == {"name": "ds", "group": "apps", "kind": "daemonsets"}


async def test_create_in_missing_namespace_is_not_found(api: ApiService):
    e = await error_of(api.create(PODS, "nope", pod(namespace="nope"), opts=opts()))
    assert e.code == 404 and e.message == 'namespaces "nope" not found'


async def test_create_in_terminating_namespace_is_forbidden(api: ApiService):
    await api.create(NAMESPACES, "", {"metadata": {"name": "gone"}}, opts=opts())
    await api.delete(NAMESPACES, "", "gone", opts=opts())
    e = await error_of(api.create(PODS, "gone", pod(name="x", namespace="gone"), opts=opts()))
    assert e.code == 403
    assert e.message == ('pods "x" is forbidden: unable to create new content in namespace gone because it '
                         'is being terminated')
    assert e.status["details"]["causes"][0]["reason"] == "NamespaceTerminating"


async def test_namespace_mismatch_is_bad_request(api: ApiService):
    e = await error_of(api.create(PODS, "kube-system", pod(), opts=opts()))
    assert e.code == 400
    assert e.message == "the namespace of the provided object does not match the namespace sent on the request"


async def test_namespace_filled_from_request(api: ApiService):
    body = pod()
    del body["metadata"]["namespace"]
    created = await api.create(PODS, "kube-system", body, opts=opts())
    assert created["metadata"]["namespace"] == "kube-system"


async def test_kind_mismatch_is_bad_request(api: ApiService):
    e = await error_of(api.create(DAEMONSETS, "default", pod(), opts=opts()))
    assert e.code == 400 and "cannot be handled as a DaemonSet" in e.message


async def test_resource_version_on_create_is_refused(api: ApiService):
    body = pod()
    body["metadata"]["resourceVersion"] = "5"
    e = await error_of(api.create(PODS, "default", body, opts=opts()))
    assert e.code == 500 and e.message == "resourceVersion should not be set on objects to be created"


async def test_invalid_object_is_unprocessable(api: ApiService):
    body = daemonset()
    del body["spec"]["template"]["spec"]["containers"][0]["image"]
    e = await error_of(api.create(DAEMONSETS, "default", body, opts=opts()))
    assert e.code == 422 and e.reason == "Invalid"
    assert e.message == 'DaemonSet.apps "ds" is invalid: spec.template.spec.containers[0].image: Required value'
    assert api.store.get(DAEMONSETS.key, "default", "ds") is None


async def test_dry_run_create_stores_nothing(api: ApiService):
    created = await api.create(DAEMONSETS, "default", daemonset(), opts=opts(dry_run=True))
    assert created["metadata"]["uid"]
    assert api.store.get(DAEMONSETS.key, "default", "ds") is None


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore", None])
async def test_field_validation(api: ApiService, validation):
    body = daemonset()
    body["spec"]["replicas"] = 3
    body["spec"]["template"]["spec"]["containers"][0]["foo"] = 1
    o = opts(field_validation=validation)
    if validation == "Strict":
        e = await error_of(api.create(DAEMONSETS, "default", body, opts=o))
        assert e.code == 400
        # Reported in document order, as Go's strict decoder meets them.
        assert e.message == ('DaemonSet in version "v1" cannot be handled as a DaemonSet: '
                             'strict decoding error: unknown field "spec.template.spec.containers[0].foo", '
                             'unknown field "spec.replicas"')
        return
    created = await api.create(DAEMONSETS, "default", body, opts=o)
    assert "replicas" not in created["spec"]
    assert "foo" not in created["spec"]["template"]["spec"]["containers"][0]
    expected = [] if validation == "Ignore" else [
        'unknown field "spec.template.spec.containers[0].foo"', 'unknown field "spec.replicas"']
    assert o.warnings == expected


# -- update ----------------------------------------------------------------------------------------


async def test_update_with_stale_resource_version_conflicts(api: ApiService):
    ds = await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    body = daemonset(image="img:2")
    body["metadata"]["resourceVersion"] = ds["metadata"]["resourceVersion"]
    await api.update(DAEMONSETS, "default", "ds", body, opts=opts())
    stale = daemonset(image="img:3")
    stale["metadata"]["resourceVersion"] = ds["metadata"]["resourceVersion"]
    e = await error_of(api.update(DAEMONSETS, "default", "ds", stale, opts=opts()))
    assert e.code == 409 and e.reason == "Conflict"
    assert e.message == ('Operation cannot be fulfilled on daemonsets.apps "ds": the object has been modified; '
                         'please apply your changes to the latest version and try again')


async def test_update_without_resource_version_is_unconditional(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    updated, created = await api.update(DAEMONSETS, "default", "ds", daemonset(image="img:2"), opts=opts())
    assert not created
    assert updated["spec"]["template"]["spec"]["containers"][0]["image"] == "img:2"


async def test_update_name_mismatch_is_bad_request(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    e = await error_of(api.update(DAEMONSETS, "default", "other", daemonset(), opts=opts()))
    assert e.code == 400
    assert e.message == "the name of the object (ds) does not match the name on the URL (other)"


async def test_put_of_missing_daemonset_is_not_found_but_lease_is_created(api: ApiService):
    e = await error_of(api.update(DAEMONSETS, "default", "ds", daemonset(), opts=opts()))
    assert e.code == 404 and e.message == 'daemonsets.apps "ds" not found'
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "n1", "namespace": "kube-node-lease"}, "spec": {"holderIdentity": "n1"}}
    obj, created = await api.update(LEASES, "kube-node-lease", "n1", lease, opts=opts())
    assert created and obj["spec"]["holderIdentity"] == "n1"


async def test_daemonset_generation_and_template_generation(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())

    def body(image: str = "img:1", annotations: dict | None = None, **spec) -> dict:
        obj = daemonset(image=image, **spec)
        obj["metadata"]["labels"]["extra"] = "1"
        if annotations:
            obj["metadata"]["annotations"] = annotations
        return obj

    async def put(obj):
        obj, _ = await api.update(DAEMONSETS, "default", "ds", obj, opts=opts())
        return obj["metadata"]["generation"], obj["metadata"]["annotations"][TEMPLATE_GENERATION]

    assert await put(body()) == (1, "1")  # metadata only: no bump
    assert await put(body(minReadySeconds=5)) == (2, "1")  # spec outside the template
    assert await put(body(image="img:2", minReadySeconds=5)) == (3, "2")  # template change bumps both
    # A client cannot set the annotation.
    assert await put(body(image="img:2", minReadySeconds=5, annotations={TEMPLATE_GENERATION: "42"})) == (3, "2")


async def test_main_update_ignores_status_and_status_update_ignores_spec(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    body = daemonset(image="img:2")
    body["status"] = {"numberReady": 5}
    obj, _ = await api.update(DAEMONSETS, "default", "ds", body, opts=opts())
    assert obj["status"]["numberReady"] == 0
    status_body = daemonset(image="img:9")
    status_body["metadata"]["labels"] = {"hijack": "1"}
    status_body["status"] = {"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1,
                             "numberReady": 1, "observedGeneration": 2}
    obj, _ = await api.update(DAEMONSETS, "default", "ds", status_body, subresource="status", opts=opts())
    assert obj["status"]["numberReady"] == 1
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "img:2"
    assert obj["metadata"]["labels"] == {"app": "ds"}
    assert obj["metadata"]["generation"] == 2


async def test_unchanged_update_is_not_written(api: ApiService):
    ds = await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    rv = api.store.current_rv()
    obj, _ = await api.update(DAEMONSETS, "default", "ds", dict(ds), opts=opts())
    assert obj["metadata"]["resourceVersion"] == ds["metadata"]["resourceVersion"]
    assert api.store.current_rv() == rv


async def test_unknown_subresource_is_not_found(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    e = await error_of(api.patch(DAEMONSETS, "default", "ds", {"spec": {"replicas": 2}}, "merge",
                                 subresource="scale", opts=opts()))
    assert e.code == 404 and e.message == "the server could not find the requested resource"
    assert "replicas" not in (await api.get(DAEMONSETS, "default", "ds"))["spec"]


# -- patch -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("patch_type, patch", [
    ("merge", {"metadata": {"labels": {"x": "y"}}}),
    ("strategic", {"metadata": {"labels": {"x": "y"}}}),
    ("json", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]),
])
async def test_patch_types(api: ApiService, patch_type, patch):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    obj, created = await api.patch(DAEMONSETS, "default", "ds", patch, patch_type, opts=opts())
    assert not created and obj["metadata"]["labels"] == {"app": "ds", "x": "y"}
    assert obj["metadata"]["generation"] == 1


async def test_patch_missing_object_is_not_found(api: ApiService):
    e = await error_of(api.patch(DAEMONSETS, "default", "ds", {}, "merge", opts=opts()))
    assert e.code == 404


async def test_patch_with_stale_resource_version_conflicts(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    e = await error_of(api.patch(DAEMONSETS, "default", "ds", {"metadata": {"resourceVersion": "1"}}, "merge",
                                 opts=opts()))
    assert e.code == 409


async def test_server_side_apply_creates_then_updates(api: ApiService):
    config = daemonset()
    obj, created = await api.patch(DAEMONSETS, "default", "ds", config, "apply", opts=opts(field_manager="me"))
    assert created and obj["metadata"]["generation"] == 1
    assert any(m["manager"] == "me" and m["operation"] == "Apply" for m in obj["metadata"]["managedFields"])
    obj, created = await api.patch(DAEMONSETS, "default", "ds", daemonset(image="img:2"), "apply",
                                   opts=opts(field_manager="me"))
    assert not created and obj["metadata"]["generation"] == 2


async def test_apply_requires_field_manager(api: ApiService):
    e = await error_of(api.patch(DAEMONSETS, "default", "ds", daemonset(), "apply", opts=opts()))
    assert e.code == 422
    assert e.message == 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for ' \
                        'apply patch'


# -- delete ----------------------------------------------------------------------------------------


async def test_delete_daemonset_answers_status(api: ApiService):
    ds = await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    code, body = await api.delete(DAEMONSETS, "default", "ds", opts=opts())
    assert code == 200
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": "ds", "group": "apps", "kind": "daemonsets", "uid": ds["metadata"]["uid"]}}
    assert api.store.get(DAEMONSETS.key, "default", "ds") is None
    e = await error_of(api.delete(DAEMONSETS, "default", "ds", opts=opts()))
    assert e.code == 404


async def test_finalizers_keep_the_object_until_removed(api: ApiService, clock: FixedClock):
    body = daemonset()
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await api.create(DAEMONSETS, "default", body, opts=opts())
    code, obj = await api.delete(DAEMONSETS, "default", "ds", opts=opts())
    assert code == 200 and obj["kind"] == "DaemonSet"
    assert obj["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    assert obj["metadata"]["generation"] == 2
    assert api.store.get(DAEMONSETS.key, "default", "ds") is not None
    obj, _ = await api.patch(DAEMONSETS, "default", "ds", {"metadata": {"finalizers": None}}, "merge", opts=opts())
    assert api.store.get(DAEMONSETS.key, "default", "ds") is None


@pytest.mark.parametrize("policy, finalizer", [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")])
async def test_propagation_policy_finalizers(api: ApiService, policy, finalizer):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    code, obj = await api.delete(DAEMONSETS, "default", "ds", options={"propagationPolicy": policy}, opts=opts())
    assert obj["metadata"]["finalizers"] == [finalizer]
    assert obj["metadata"]["deletionTimestamp"]


async def test_delete_preconditions(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    e = await error_of(api.delete(DAEMONSETS, "default", "ds", options={"preconditions": {"uid": "other"}},
                                  opts=opts()))
    assert e.code == 409
    assert "the UID in the precondition (other) does not match the UID in record" in e.message


async def test_delete_resource_version_precondition_names_the_kind(api: ApiService):
    created = await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    rv = created["metadata"]["resourceVersion"]
    e = await error_of(api.delete(DAEMONSETS, "default", "ds", options={"preconditions": {"resourceVersion": "1"}},
                                  opts=opts()))
    assert e.code == 409
    assert e.message == (f'Operation cannot be fulfilled on DaemonSet.apps "ds": the ResourceVersion in the '
                         f"precondition (1) does not match the ResourceVersion in record ({rv}). The object "
                         "might have been modified")
    assert e.status["details"] == {"name": "ds", "group": "apps", "kind": "DaemonSet"}


async def test_delete_invalid_propagation_policy(api: ApiService):
    await api.create(DAEMONSETS, "default", daemonset(), opts=opts())
    e = await error_of(api.delete(DAEMONSETS, "default", "ds", options={"propagationPolicy": "Sideways"},
                                  opts=opts()))
    assert e.code == 422 and 'propagationPolicy: Unsupported value: "Sideways"' in e.message


async def test_unbound_pod_is_deleted_at_once(api: ApiService):
    await api.create(PODS, "default", pod(), opts=opts())
    code, obj = await api.delete(PODS, "default", "p", opts=opts())
    assert obj["kind"] == "Pod"
    assert api.store.get("pods", "default", "p") is None


async def test_bound_pod_is_deleted_gracefully_then_forced(api: ApiService, clock: FixedClock):
    await api.create(PODS, "default", pod(nodeName="n1"), opts=opts())
    code, obj = await api.delete(PODS, "default", "p", opts=opts())
    md = obj["metadata"]
    assert md["deletionGracePeriodSeconds"] == 30
    assert md["deletionTimestamp"] == "2026-01-01T00:00:30Z"
    assert md["generation"] == 2
    assert api.store.get("pods", "default", "p") is not None
    # A longer grace period changes nothing; a shorter one moves the deadline.
    _, again = await api.delete(PODS, "default", "p", options={"gracePeriodSeconds": 60}, opts=opts())
    assert again["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:30Z"
    _, shorter = await api.delete(PODS, "default", "p", options={"gracePeriodSeconds": 10}, opts=opts())
    assert shorter["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:10Z"
    await api.delete(PODS, "default", "p", options={"gracePeriodSeconds": 0}, opts=opts())
    assert api.store.get("pods", "default", "p") is None


async def test_namespace_deletion_waits_for_finalize(api: ApiService):
    await api.create(NAMESPACES, "", {"metadata": {"name": "team"}}, opts=opts())
    code, ns = await api.delete(NAMESPACES, "", "team", opts=opts())
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    _, again = await api.delete(NAMESPACES, "", "team", opts=opts())
    assert again["metadata"]["resourceVersion"] == ns["metadata"]["resourceVersion"]
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}, "spec": {"finalizers": []}}
    await api.update(NAMESPACES, "", "team", body, subresource="finalize", opts=opts())
    assert api.store.get("namespaces", "", "team") is None


async def test_spec_finalizers_change_only_through_finalize(api: ApiService):
    await api.create(NAMESPACES, "", {"metadata": {"name": "team"}}, opts=opts())
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}, "spec": {"finalizers": []}}
    obj, _ = await api.update(NAMESPACES, "", "team", body, opts=opts())
    assert obj["spec"]["finalizers"] == ["kubernetes"]
    assert obj["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team"


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_immortal_namespaces(api: ApiService, name):
    e = await error_of(api.delete(NAMESPACES, "", name, opts=opts()))
    assert e.code == 403 and e.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


async def test_delete_collection(api: ApiService):
    for name in ("a", "b", "c"):
        body = pod(name=name)
        body["metadata"]["labels"] = {"keep": "yes" if name == "c" else "no"}
        await api.create(PODS, "default", body, opts=opts())
    result = await api.delete_collection(PODS, "default", label_selector="keep=no", opts=opts())
    assert [o["metadata"]["name"] for o in result["items"]] == ["a", "b"]
    assert [o["metadata"]["name"] for o in (await api.list(PODS, "default"))["items"]] == ["c"]


# -- binding and eviction --------------------------------------------------------------------------


def binding(name: str = "p", node: str = "n1") -> dict:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": "default"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


async def test_binding(api: ApiService):
    created = await api.create(PODS, "default", pod(), opts=opts())
    code, status = await api.create_subresource(PODS, "default", "p", "binding", binding(), opts=opts())
    assert code == 201 and status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "code": 201}
    bound = await api.get(PODS, "default", "p")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["metadata"]["generation"] == created["metadata"]["generation"]
    assert {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
            "lastTransitionTime": "2026-01-01T00:00:00Z"} in bound["status"]["conditions"]
    e = await error_of(api.create_subresource(PODS, "default", "p", "binding", binding(node="n2"), opts=opts()))
    assert e.code == 409
    assert e.message == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'


async def test_binding_name_mismatch(api: ApiService):
    await api.create(PODS, "default", pod(), opts=opts())
    e = await error_of(api.create_subresource(PODS, "default", "p", "binding", binding(name="q"), opts=opts()))
    assert e.code == 400 and e.message == "name in URL does not match name in Binding object"


async def test_eviction_deletes_with_grace_and_marks_disruption(api: ApiService):
    await api.create(PODS, "default", pod(nodeName="n1"), opts=opts())
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"}}
    code, status = await api.create_subresource(PODS, "default", "p", "eviction", eviction, opts=opts())
    assert code == 201 and status["status"] == "Success"
    evicted = await api.get(PODS, "default", "p")
    assert evicted["metadata"]["deletionGracePeriodSeconds"] == 30
    assert any(c["type"] == "DisruptionTarget" and c["reason"] == "EvictionByEvictionAPI"
               for c in evicted["status"]["conditions"])
    forced = dict(eviction, deleteOptions={"gracePeriodSeconds": 0})
    await api.create_subresource(PODS, "default", "p", "eviction", forced, opts=opts())
    # Already terminating: no budget is consulted and the delete goes through with the shorter
    # grace period (upstream's canIgnorePDB path), so the pod is gone.
    assert api.store.get("pods", "default", "p") is None


async def test_eviction_of_unbound_pod_deletes_it(api: ApiService):
    await api.create(PODS, "default", pod(), opts=opts())
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"}}
    await api.create_subresource(PODS, "default", "p", "eviction", eviction, opts=opts())
    assert api.store.get("pods", "default", "p") is None


# -- list and watch --------------------------------------------------------------------------------


async def test_list_selectors_and_missing_namespace(api: ApiService):
    await api.create(PODS, "default", dict(pod(name="a"), metadata={"name": "a", "labels": {"x": "1"}}),
                     opts=opts())
    await api.create(PODS, "default", pod(name="b", nodeName="n1"), opts=opts())
    names = lambda result: [o["metadata"]["name"] for o in result["items"]]  # noqa: E731
    assert names(await api.list(PODS, "default", label_selector="x=1")) == ["a"]
    assert names(await api.list(PODS, None, field_selector="spec.nodeName=n1")) == ["b"]
    assert names(await api.list(PODS, "default", field_selector="metadata.name=b")) == ["b"]
    assert names(await api.list(PODS, "nowhere")) == []
    result = await api.list(PODS, "default")
    assert result["kind"] == "PodList" and result["apiVersion"] == "v1"
    assert result["metadata"]["resourceVersion"] == str(api.store.current_rv())


async def test_list_bad_selectors(api: ApiService):
    e = await error_of(api.list(PODS, "default", field_selector="spec.bogus=1"))
    assert e.code == 400 and "field label not supported: spec.bogus" in e.message
    e = await error_of(api.list(PODS, "default", label_selector="a in (b"))
    assert e.code == 400


async def test_list_pagination(api: ApiService):
    for i in range(5):
        await api.create(PODS, "default", pod(name=f"p{i}"), opts=opts())
    first = await api.list(PODS, "default", limit=2)
    assert [o["metadata"]["name"] for o in first["items"]] == ["p0", "p1"]
    assert first["metadata"]["remainingItemCount"] == 3
    rest = await api.list(PODS, "default", limit=10, continue_token=first["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in rest["items"]] == ["p2", "p3", "p4"]
    assert "continue" not in rest["metadata"]


async def test_list_resource_version_match_needs_resource_version(api: ApiService):
    e = await error_of(api.list(PODS, "default", resource_version_match="NotOlderThan"))
    assert e.code == 422 and "resourceVersionMatch is forbidden unless resourceVersion is provided" in e.message


async def collect(events, n: int) -> list:
    out = []
    async for event in events:
        out.append(event)
        if len(out) == n:
            break
    await events.aclose()
    return out


async def test_watch_from_zero_starts_with_synthetic_added(api: ApiService):
    await api.create(PODS, "default", pod(name="a"), opts=opts())
    events = api.watch(PODS, "default", resource_version="0")
    first = await events.__anext__()
    assert first.type == "ADDED" and first.object["metadata"]["name"] == "a"
    await api.create(PODS, "default", pod(name="b"), opts=opts())
    second = await events.__anext__()
    assert (second.type, second.object["metadata"]["name"]) == ("ADDED", "b")
    await events.aclose()


async def test_watch_from_resource_version_and_field_selector(api: ApiService):
    created = await api.create(PODS, "default", pod(name="a"), opts=opts())
    rv = created["metadata"]["resourceVersion"]
    events = api.watch(PODS, "default", resource_version=rv, field_selector="metadata.name=a")
    await api.create(PODS, "default", pod(name="b"), opts=opts())
    await api.patch(PODS, "default", "a", {"metadata": {"labels": {"x": "1"}}}, "merge", opts=opts())
    [event] = await collect(events, 1)
    assert (event.type, event.object["metadata"]["labels"]) == ("MODIFIED", {"x": "1"})


async def test_watch_initial_events_end_bookmark(api: ApiService):
    await api.create(PODS, "default", pod(name="a"), opts=opts())
    events = api.watch(PODS, "default", send_initial_events=True, allow_bookmarks=True,
                       resource_version_match="NotOlderThan", resource_version="")
    added, bookmark = await collect(events, 2)
    assert added.type == "ADDED"
    assert bookmark.type == "BOOKMARK"
    assert bookmark.object["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark.object["kind"] == "Pod"


async def test_watch_too_old_resource_version_is_an_error_event(clock: FixedClock):
    api = ApiService(MemoryStore(history=2), clock=clock)
    await api.start()
    for i in range(4):
        await api.create(PODS, "default", pod(name=f"p{i}"), opts=opts())
    [event] = await collect(api.watch(PODS, "default", resource_version="1"), 1)
    assert event.type == "ERROR"
    assert event.object["code"] == 410 and event.object["reason"] == "Expired"
    assert event.object["message"].startswith("too old resource version: 1 (")


async def test_watch_timeout_ends_stream(api: ApiService):
    events = api.watch(PODS, "default", timeout_seconds=0.05)
    assert await collect(events, 10) == []


async def test_watch_bad_selector_fails_before_streaming(api: ApiService):
    with pytest.raises(ApiError) as info:
        api.watch(PODS, "default", field_selector="spec.bogus=1")
    assert info.value.code == 400


async def test_watch_periodic_bookmarks(clock: FixedClock):
    api = ApiService(MemoryStore(), clock=clock, bookmark_interval=0.01)
    await api.start()
    events = api.watch(PODS, "default", allow_bookmarks=True)
    [bookmark] = await collect(events, 1)
    assert bookmark.type == "BOOKMARK"
    assert bookmark.object["metadata"]["resourceVersion"] == str(api.store.current_rv())


# -- helpers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path, expected", [
    ("spec.replicas", {"spec": {"template": {"x": 1}}}),
    ("spec.template.x", {"spec": {"replicas": 1, "template": {}}}),
])
def test_drop_path(path, expected):
    obj = {"spec": {"replicas": 1, "template": {"x": 1}}}
    _drop_path(obj, path)
    assert obj == expected


def test_drop_path_through_lists_and_map_keys():
    obj = {"a": [{"b": 1, "c": 2}], "m": {"k.io/x": {"d": 1, "e": 2}}}
    _drop_path(obj, "a[0].c")
    _drop_path(obj, "m[k.io/x].e")
    assert obj == {"a": [{"b": 1}], "m": {"k.io/x": {"d": 1}}}


async def test_cluster_ips_survive_a_restart(clock: FixedClock):
    store = MemoryStore()
    api = ApiService(store, clock=clock)
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
    created = await api.create(SERVICES, "default", svc, opts=opts())
    ip = created["spec"]["clusterIP"]
    assert ip.startswith("10.") and created["spec"]["clusterIPs"] == [ip]
    restarted = ApiService(store, clock=clock)
    await restarted.start()
    assert restarted.cluster_ips.has(ip)
    clash = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "other", "namespace": "default"},
             "spec": {"ports": [{"port": 80}], "clusterIP": ip}}
    e = await error_of(restarted.create(SERVICES, "default", clash, opts=opts()))
    assert e.code == 422 and "provided IP is already allocated" in e.message
    await restarted.delete(SERVICES, "default", "web", opts=opts())
    assert not restarted.cluster_ips.has(ip)


async def test_server_side_apply_conflict_and_force(api: ApiService):
    await api.patch(DAEMONSETS, "default", "ds", daemonset(), "apply", opts=opts(field_manager="a"))
    e = await error_of(api.patch(DAEMONSETS, "default", "ds", daemonset(image="img:2"), "apply",
                                 opts=opts(field_manager="b")))
    assert e.code == 409 and e.message.startswith("Apply failed with 1 conflict")
    obj, _ = await api.patch(DAEMONSETS, "default", "ds", daemonset(image="img:2"), "apply",
                             opts=opts(field_manager="b", force=True))
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "img:2"
