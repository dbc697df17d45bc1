"""Attack 4: a DaemonSet named with 243-253 characters silently never got a pod: its revision
name ``name-hash`` was longer than 253 characters and the sync failed with only a log line.

Fixed by upstream's truncation (``ControllerRevisionName``: the prefix cut to 223 characters)
and a Warning event on any DaemonSet the controller cannot sync."""

from __future__ import annotations

import pytest

from everynode.api.validation import validate_create
from everynode.controllers.daemonset.history import compute_hash, new_revision, revision_data, revision_name
from tests.support.ds_cluster import DS, NS, Env


async def _create_long_named(env: Env, name: str) -> None:
    await env.client.create(DS, {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "long"}},
                 "template": {"metadata": {"labels": {"app": "long"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}})


@pytest.mark.parametrize("length", [1, 222, 223, 224, 243, 253])
def test_revision_names_are_valid_for_every_valid_daemonset_name(length: int) -> None:
    name = "d" * length
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": name, "namespace": NS, "uid": "u1"},
          "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}}}
    hash_ = compute_hash(ds["spec"]["template"], None)
    revision = new_revision(ds, hash_, 1, revision_data(ds))
    rev_name = revision["metadata"]["name"]
    assert len(rev_name) <= 253
    assert rev_name == revision_name(name, hash_) == f"{name[:223]}-{hash_}"
    errors = [e for e in validate_create("controllerrevisions.apps", revision) if "name" in e.field]
    assert errors == []


async def test_daemonset_with_a_253_character_name_gets_its_pods() -> None:
    env = Env()
    await env.node("n1")
    await env.ctrl.start()
    try:
        await _create_long_named(env, "x" * 253)
        await env.ctrl.wait_idle()
        pods = await env.pods()
        assert len(pods) == 1
        assert len(await env.revisions()) == 1
        assert await env.events("FailedSync") == []
    finally:
        await env.ctrl.stop()


async def test_a_daemonset_the_controller_cannot_sync_gets_a_warning_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from everynode.controllers.daemonset import controller as ds_controller

    def broken(prefix: str, hash_: str) -> str:
        return f"{prefix}-{hash_}"  # the old, untruncated name

    monkeypatch.setattr("everynode.controllers.daemonset.history.revision_name", broken)
    env = Env()
    await env.node("n1")
    await env.ctrl.start()
    try:
        await _create_long_named(env, "y" * 250)
        await env.ctrl.wait_idle()
        messages = await env.events(ds_controller.FAILED_SYNC)
        assert messages, "no Warning event for a DaemonSet that cannot be synced"
        assert "failed to construct revisions" in messages[0]
    finally:
        await env.ctrl.stop()
