"""The Events a kubelet records about a pod's containers (pure: what to say, not how to send it).

Upstream: ``pkg/kubelet/events/event.go`` (the reasons), ``pkg/kubelet/images/image_manager.go``
(Pulling / Pulled / Failed / BackOff of an image), ``pkg/kubelet/kuberuntime/kuberuntime_container.go``
(Created, Started, Killing, BackOff of a failed container).  Every container event names its
container in ``involvedObject.fieldPath`` (``spec.containers{name}``, ``spec.initContainers{name}``),
as ``recordContainerEvent`` does; ``kubectl describe pod`` prints that path before the message.

Which "Pulled" a simulated node says: a cluster's nodes usually have the images of a DaemonSet
cached after its first rollout, and a kubelet pulls again only when the pull policy asks it to.
So, as ``image_manager.go`` decides: ``imagePullPolicy: Always`` (also the default for an image
without a tag or with ``:latest``) → ``Pulling`` then ``Successfully pulled image "x" in <d> (<d>
including waiting). Image size: <n> bytes.``; ``IfNotPresent``/``Never`` → ``Container image "x"
already present on machine``.  The pull time is the pod's start-up time (everynode's model of
"how long the node needed"), the size a stable number derived from the image name.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, NamedTuple

Obj = dict[str, Any]

NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class ContainerEvent(NamedTuple):
    type: str
    reason: str
    message: str
    field_path: str


def field_path(container: Obj, *, init: bool = False) -> str:
    return f"spec.{'initContainers' if init else 'containers'}{{{container.get('name', '')}}}"


def pull_policy(container: Obj) -> str:
    """The effective ``imagePullPolicy`` (defaulting: Always for ``:latest`` or no tag, else IfNotPresent)."""
    policy = container.get("imagePullPolicy")
    if policy:
        return str(policy)
    image = (container.get("image") or "").split("@", 1)
    if len(image) == 2:
        return "IfNotPresent"
    last = image[0].rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` for the durations a pull takes (``850ms``, ``1.5s``, ``2m3s``)."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        ms = round(seconds * 1000, 3)
        return f"{ms:g}ms"
    if seconds < 60:
        return f"{round(seconds, 9):g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{round(rest, 9):g}s"


def image_size(image: str) -> int:
    """A stable, plausible image size in bytes (10–110 MB) for the "Pulled" message."""
    return 10_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:8], 16) % 100_000_000


def image_present(container: Obj, *, pull_seconds: float, init: bool = False) -> list[ContainerEvent]:
    """The container's image is there: pulled (``Always``) or found cached (see the docstring)."""
    image, path = container.get("image") or "", field_path(container, init=init)
    if pull_policy(container) != "Always":
        return [ContainerEvent(NORMAL, "Pulled", f'Container image "{image}" already present on machine', path)]
    d = go_duration(pull_seconds)
    return [ContainerEvent(NORMAL, "Pulling", f'Pulling image "{image}"', path),
            ContainerEvent(NORMAL, "Pulled", f'Successfully pulled image "{image}" in {d} ({d} including '
                                             f"waiting). Image size: {image_size(image)} bytes.", path)]


def started(container: Obj, *, pull_seconds: float, init: bool = False) -> list[ContainerEvent]:
    """A container was (re)started: the image events, ``Created``, ``Started``."""
    name, path = container.get("name", ""), field_path(container, init=init)
    return [*image_present(container, pull_seconds=pull_seconds, init=init),
            ContainerEvent(NORMAL, "Created", f"Created container: {name}", path),
            ContainerEvent(NORMAL, "Started", f"Started container {name}", path)]


def pull_failed(container: Obj, *, reason: str) -> list[ContainerEvent]:
    """An image pull failed (``ErrImagePull``) or is backed off (``ImagePullBackOff``)."""
    image, path = container.get("image") or "", field_path(container)
    if reason == "ImagePullBackOff":
        return [ContainerEvent(NORMAL, "BackOff", f'Back-off pulling image "{image}"', path),
                ContainerEvent(WARNING, "Failed", "Error: ImagePullBackOff", path)]
    return [ContainerEvent(NORMAL, "Pulling", f'Pulling image "{image}"', path),
            ContainerEvent(WARNING, "Failed", f'Failed to pull image "{image}": {PULL_FAILURE}', path),
            ContainerEvent(WARNING, "Failed", "Error: ErrImagePull", path)]


PULL_FAILURE: Final = "simulated pull failure (everynode.io/behavior: image-pull-error)"


def restart_backoff(container: Obj, *, pod_name: str, namespace: str, uid: str) -> ContainerEvent:
    """The kubelet will not restart a crashed container before its back-off ends."""
    name = container.get("name", "")
    return ContainerEvent(WARNING, "BackOff",
                          f"Back-off restarting failed container {name} in pod {pod_name}_{namespace}({uid})",
                          field_path(container))


def killing(container: Obj) -> ContainerEvent:
    """The pod is being deleted: its running container is stopped."""
    return ContainerEvent(NORMAL, "Killing", f"Stopping container {container.get('name', '')}", field_path(container))


def config_error(container: Obj, message: str, *, init: bool = False) -> ContainerEvent:
    """The container's configuration could not be made (``CreateContainerConfigError``)."""
    return ContainerEvent(WARNING, "Failed", f"Error: {message}", field_path(container, init=init))
