"""Every request body goes through here: JSON, YAML, server-side-apply YAML and protobuf, with
kube-apiserver's limits.

Why one path: each limit is only worth something if no body can go around it.  The limits, and
the upstream rule behind each:

* **Size**: 3 MiB (``MaxRequestBodyBytes``), checked on ``Content-Length`` and on the bytes read;
  the answer is 413 ``Request entity too large: limit is 3145728``.
* **YAML aliases**: PyYAML (like go-yaml) shares an aliased node, so a 377-byte document of nested
  aliases is small in memory but explodes when anything walks or encodes it (a "billion laughs"
  bomb: 5 GB and a blocked event loop before this check).  go-yaml, which sigs.k8s.io/yaml and
  kubectl use, refuses a document whose expansion is mostly aliases (``document contains
  excessive aliasing``, with the same ratio rule: more than 100 aliased nodes, more than 1000
  nodes, and an aliased share above 99% at 400k nodes falling to 10% at 4M).  We count the
  expansion on the loaded value with one memoised walk over its *distinct* nodes, so the cost is
  proportional to the document, never to its expansion, and run the walk only when the text has
  an ``*`` at all: ordinary YAML pays one ``bytes.find``.  Merge keys (``<<: *a``) copy at
  load time, so the loader counts what they copy and stops at the same budget.
* **Depth**: orjson refuses JSON nested deeper than 1024 and cannot *encode* more than 254
  levels; everything stored is encoded, so a body is re-encoded once (C speed, about the cost
  of the decode) and a deeper one is refused as a decoding error instead of failing at store
  time.  YAML goes through the same encode, which is also how sigs.k8s.io/yaml works (YAML →
  JSON → object) and gives the service an unshared tree to own.

What the body *means* (types against the schema, unknown fields) is checked by the service,
where the in-process clients' writes pass too (``api.typecheck``).
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from everynode.api import errors
from everynode.apiserver import protobuf

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}

# go-yaml's alias budget (decode.go, allowedAliasRatio).
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
MIN_ALIASES = 100
MIN_DECODED = 1000
EXCESSIVE_ALIASING = "document contains excessive aliasing"
MAX_MERGED_PAIRS = ALIAS_RATIO_RANGE_LOW  # key/value pairs that merge keys may copy in one document


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


def summary(data: bytes) -> str:
    """``summarizeData``: the first 30 bytes in hex, as upstream quotes an undecodable body."""
    head = data[:30].hex()
    return head + (" ..." if len(data) > 30 else "")


def check_size(content_length: int | None, data: bytes | None = None) -> None:
    if (content_length is not None and content_length > MAX_BODY_BYTES) or (
            data is not None and len(data) > MAX_BODY_BYTES):
        raise errors.request_too_large(MAX_BODY_BYTES)


def decode_body(data: bytes, content_type: str | None, *, kind: str) -> Any:
    """A request body as a JSON-shaped value (JSON, YAML or Kubernetes protobuf)."""
    check_size(None, data)
    media = media_type(content_type)
    if media in ("", JSON):
        return _json(data, kind=kind)
    if media == YAML:
        return load_yaml(data, kind=kind)
    if media == PROTOBUF:
        try:
            value = protobuf.decode(data)
        except ValueError as e:
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): {e}") from None
        return _bounded(value, data, kind=kind)
    raise errors.unsupported_media_type(media)


def decode_patch(data: bytes, content_type: str | None) -> tuple[Any, str]:
    check_size(None, data)
    media = media_type(content_type)
    patch_type = PATCH_TYPES.get(media)
    if patch_type is None:
        raise errors.unsupported_media_type(media)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if patch_type == "apply":
            return load_yaml(data, kind=None), patch_type
        raise errors.bad_request(f"error decoding patch: {e.msg}") from None
    return _bounded(value, data, kind=None), patch_type


def _json(data: bytes, *, kind: str) -> Any:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): couldn't get "
                                 f"version/kind; json parse error: {e.msg} ({summary(data)})") from None
    return _bounded(value, data, kind=kind)


def _bounded(value: Any, data: bytes, *, kind: str | None) -> Any:
    """``value`` if the store can encode it; a decoding error (400) if it is nested too deep."""
    if isinstance(value, (dict, list)):
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError as e:
            raise _unencodable(e, data, kind) from None
    return value


def _unencodable(error: orjson.JSONEncodeError, data: bytes, kind: str | None) -> errors.ApiError:
    if "ecursion" not in str(error):  # not the depth: an integer beyond 64 bits
        return errors.bad_request(f"error decoding: {error}")
    if kind is None:
        return errors.bad_request("error decoding patch: exceeded max depth")
    return errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): couldn't get "
                              f"version/kind; json parse error: exceeded max depth ({summary(data)})")


# ---------------------------------------------------------------------------------------------
# YAML


class _Loader(yaml.CSafeLoader):
    """YAML → JSON-shaped values: like sigs.k8s.io/yaml, timestamps stay strings; merge keys
    count what they copy (see the module docstring)."""

    merged_pairs = 0

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                subnodes = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for sub in subnodes:
                    if isinstance(sub, yaml.MappingNode):
                        self.merged_pairs += len(sub.value)
                if self.merged_pairs > MAX_MERGED_PAIRS:
                    raise yaml.YAMLError(EXCESSIVE_ALIASING)
        super().flatten_mapping(node)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(data: bytes | str, *, kind: str | None) -> Any:
    """One YAML document as JSON-shaped values, within the alias and depth limits."""
    try:
        value = yaml.load(data, Loader=_Loader)  # noqa: S506 - a safe loader (CSafeLoader subclass)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise errors.bad_request(f"error converting YAML to JSON: yaml: {where}{problem}") from None
    if not isinstance(value, (dict, list)):
        return value
    raw = data.encode() if isinstance(data, str) else data
    if b"*" in raw and excessive_aliasing(value):
        raise errors.bad_request(f"error converting YAML to JSON: yaml: {EXCESSIVE_ALIASING}")
    try:
        return orjson.loads(orjson.dumps(value))  # unshared, and within the depth the store encodes
    except orjson.JSONEncodeError as e:
        raise _unencodable(e, raw, kind) from None


def allowed_alias_ratio(decoded: int) -> float:
    if decoded <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decoded >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * (decoded - ALIAS_RATIO_RANGE_LOW) / span


def excessive_aliasing(value: Any) -> bool:
    """go-yaml's rule on the loaded value: nodes decoded when every alias is expanded (``decoded``)
    against the nodes written once (``unique``); the difference are the aliased ones.

    One iterative pass over distinct containers (a shared container is expanded by multiplying
    its memoised size, never by walking it again), so a bomb costs its size in bytes."""
    sizes: dict[int, int] = {}
    unique = 0
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, children_done = stack.pop()
        ident = id(node)
        if children_done:
            children = node.values() if isinstance(node, dict) else node
            total = 1
            for child in children:
                total += sizes[id(child)] if isinstance(child, (dict, list)) else 1
            sizes[ident] = total
            continue
        if ident in sizes:
            continue
        sizes[ident] = 0  # placeholder: a cycle (YAML allows none in mappings; be safe) adds nothing
        children = list(node.values()) if isinstance(node, dict) else node
        unique += 1
        stack.append((node, True))
        for child in children:
            if not isinstance(child, (dict, list)):
                unique += 1
            elif id(child) not in sizes:
                stack.append((child, False))
    decoded = sizes[id(value)]
    aliased = decoded - unique
    return aliased > MIN_ALIASES and decoded > MIN_DECODED and aliased / decoded > allowed_alias_ratio(decoded)
