"""The HTTP transport: the same :class:`~everynode.client.base.Client` over the Kubernetes REST API.

It talks to the embedded server and to any real cluster from a kubeconfig (or in-cluster service
account).  Choices:

* aiohttp, one pooled :class:`aiohttp.ClientSession` per client (keep-alive connections, at most
  ``max_connections``), created lazily inside the running loop; orjson for every body.
* URLs come from the registry (``ResourceType.base_path``), so the client knows every built-in
  resource without discovery round trips; a name the registry does not know (a custom
  resource of the server's CRDs) is looked up in the server's aggregated discovery, read at
  most every :data:`REDISCOVER_SECONDS` and kept per client (never registered process-wide:
  the client may share its process with another server).
* Errors: a ``Status`` body is raised verbatim as :class:`ApiError`; any other error body becomes
  the Status client-go synthesises (``errors.NewGenericServerResponse``: reason and message by
  code, the body kept as an ``UnexpectedServerResponse`` cause), so callers branch on
  ``e.code``/``e.reason`` whatever answered (the API server, a proxy, a load balancer).
* Watches stream newline-delimited JSON; lines are split by hand from raw chunks (aiohttp's line
  reader has a 64 KiB line limit; one object can be larger).  ``ERROR`` events are raised as
  ApiError (410 Expired → the informer relists).  A watch has no overall timeout — the server
  ends it after ``timeoutSeconds`` — only a connect timeout.
* Transport failures (connection refused/reset, request timeout) propagate as aiohttp /
  :class:`asyncio.TimeoutError` exceptions: they are not API answers and carry no Status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from everynode.api import errors
from everynode.api.errors import ApiError
from everynode.api.registry import RESOURCES, ResourceType, Subresource, names_of
from everynode.client import kubeconfig as kcfg
from everynode.client.base import PATCH_CONTENT_TYPES, Client, Obj, delete_options, resolve_resource

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
REDISCOVER_SECONDS = 5.0  # an unknown resource name re-reads discovery at most this often
TOKEN_FILE_REFRESH = 60.0  # seconds; client-go re-reads token files about every minute
_MAX_SERVER_MESSAGE = 1024


_BUILTIN_KEYS = frozenset(rt.key for rt in RESOURCES)


def _discovered_type(group: str, version: str, entry: dict[str, Any]) -> ResourceType | None:
    """A ``ResourceType`` from one aggregated-discovery resource entry."""
    kind = (entry.get("responseKind") or {}).get("kind")
    plural = entry.get("resource")
    if not kind or not plural or not version:
        return None
    subresources = tuple(Subresource(sub.get("subresource") or "", (sub.get("responseKind") or {}).get("kind") or "",
                                     tuple(sub.get("verbs") or ()))
                         for sub in entry.get("subresources") or ())
    return ResourceType(group, version, kind, plural, entry.get("singularResource") or kind.lower(),
                        entry.get("scope") == "Namespaced", tuple(entry.get("shortNames") or ()),
                        tuple(entry.get("categories") or ()), verbs=tuple(entry.get("verbs") or ()),
                        subresources=subresources)


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _generic_status(code: int, method: str, rt: ResourceType | None, name: str, body: bytes,
                    retry_after: int | None) -> dict[str, Any]:
    """``errors.NewGenericServerResponse`` for a response that is not a Status."""
    server_message = body.decode("utf-8", "replace").strip()[:_MAX_SERVER_MESSAGE] or "unknown"
    reason, message = "Unknown", f"the server responded with the status code {code} but did not return more information"
    if code == 409:
        reason = "AlreadyExists" if method == "POST" else "Conflict"
        message = "the server reported a conflict"
    elif code == 404:
        reason, message = "NotFound", "the server could not find the requested resource"
    elif code == 400:
        reason, message = "BadRequest", "the server rejected our request for an unknown reason"
    elif code == 401:
        reason, message = "Unauthorized", "the server has asked for the client to provide credentials"
    elif code == 403:
        reason, message = "Forbidden", server_message
    elif code == 406:
        reason = "NotAcceptable"
        message = (server_message if server_message != "unknown"
                   else "the server was unable to respond with a content type that the client supports")
    elif code == 415:
        reason, message = "UnsupportedMediaType", server_message
    elif code == 405:
        reason, message = "MethodNotAllowed", "the server does not allow this method on the requested resource"
    elif code == 422:
        reason, message = "Invalid", "the server rejected our request due to an error in our request"
    elif code == 503:
        reason, message = "ServiceUnavailable", "the server is currently unable to handle the request"
    elif code == 504:
        reason = "Timeout"
        message = ("the server was unable to return a response in the time allotted, "
                   "but may still be processing the request")
    elif code == 429:
        reason, message = "TooManyRequests", "the server has received too many requests and has asked us to try again later"
    elif code >= 500:
        reason = "InternalError"
        message = f'an error on the server ("{server_message}") has prevented the request from succeeding'
    details: dict[str, Any] = {}
    if rt is not None:
        qualified = rt.key
        message = f"{message} ({method.lower()} {qualified} {name})" if name else f"{message} ({method.lower()} {qualified})"
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
    if name:
        details["name"] = name
    details["causes"] = [{"reason": "UnexpectedServerResponse", "message": server_message}]
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.status(code, reason, message, details)


def _error_from_response(code: int, method: str, rt: ResourceType | None, name: str, body: bytes,
                         retry_after: int | None) -> ApiError:
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        doc.setdefault("code", code)
        return ApiError(doc)
    return ApiError(_generic_status(code, method, rt, name, body, retry_after))


def _retry_after(headers: Any) -> int | None:
    value = headers.get("Retry-After")
    if value and value.isdigit():
        return int(value)
    return None


class HttpClient(Client):
    def __init__(self, server: str, *, ssl: Any = True, token: str | None = None, token_file: str | None = None,
                 basic_auth: tuple[str, str] | None = None, namespace: str = "default",
                 user_agent: str = "everynode", timeout: float = DEFAULT_TIMEOUT, tls_server_name: str | None = None,
                 max_connections: int = 100) -> None:
        """``ssl``: an SSLContext, True (system CAs) or False (no verification)."""
        self.server = server.rstrip("/")
        self.ssl = ssl
        self.namespace = namespace
        self.user_agent = user_agent
        self.timeout = timeout
        self.tls_server_name = tls_server_name
        self.max_connections = max_connections
        self._token = token
        self._token_file = token_file
        self._token_read_at: float | None = None
        self._discovered: dict[str, ResourceType] = {}  # custom resources found in discovery
        self._discovered_at: float | None = None
        self._basic = aiohttp.BasicAuth(*basic_auth) if basic_auth else None
        self._session: aiohttp.ClientSession | None = None

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def from_access(cls, access: kcfg.ClusterAccess, **kwargs: Any) -> HttpClient:
        basic = (access.username, access.password) if access.username and access.password else None
        return cls(access.server, ssl=access.ssl_context(), token=access.token, token_file=access.token_file,
                   basic_auth=basic, namespace=access.namespace, tls_server_name=access.tls_server_name, **kwargs)

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None, *, context: str | None = None, **kwargs: Any) -> HttpClient:
        """From a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."""
        return cls.from_access(kcfg.load(path, context=context), **kwargs)

    @classmethod
    def in_cluster(cls, **kwargs: Any) -> HttpClient:
        return cls.from_access(kcfg.in_cluster(), **kwargs)

    # -- plumbing --------------------------------------------------------------------------------

    async def _resolve(self, resource: str) -> ResourceType:
        """The resource a name means: the registry's, else the server's discovered ones."""
        try:
            return resolve_resource(resource)
        except ApiError:
            pass
        found = self._discovered.get(resource) or self._discovered.get(resource.lower())
        now = asyncio.get_running_loop().time()
        if found is None and (self._discovered_at is None or now - self._discovered_at > REDISCOVER_SECONDS):
            self._discovered_at = now
            self._discovered = await self._discover()
            found = self._discovered.get(resource) or self._discovered.get(resource.lower())
        if found is None:
            raise errors.path_not_found()
        return found

    async def _discover(self) -> dict[str, ResourceType]:
        """Name → resource for the server's resources the registry does not know (aggregated
        discovery of ``/apis``: every group, every version, preferred first)."""
        session = self._get_session()
        headers = self._headers()
        headers["Accept"] = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        kwargs: dict[str, Any] = {"server_hostname": self.tls_server_name} if self.tls_server_name else {}
        async with session.get(self.server + "/apis", headers=headers,
                               timeout=aiohttp.ClientTimeout(total=self.timeout), **kwargs) as resp:
            if resp.status >= 400:
                return {}
            document = orjson.loads(await resp.read())
        table: dict[str, ResourceType] = {}
        for group in document.get("items") or ():
            name = (group.get("metadata") or {}).get("name") or ""
            for position, version in enumerate(group.get("versions") or ()):
                for entry in version.get("resources") or ():
                    rt = _discovered_type(name, version.get("version") or "", entry)
                    if rt is None or rt.key in _BUILTIN_KEYS:
                        continue
                    names = names_of(rt) if position == 0 else [
                        n for n in names_of(rt) if n.endswith(f".{rt.version}.{rt.group}")]
                    for alias in names:
                        table.setdefault(alias, rt)
        return table

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.ssl, limit=self.max_connections)
            self._session = aiohttp.ClientSession(connector=connector, headers={"User-Agent": self.user_agent},
                                                  auth=self._basic)
        return self._session

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        token = self._bearer()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _bearer(self) -> str | None:
        if self._token_file is None:
            return self._token
        now = asyncio.get_running_loop().time()
        if self._token_read_at is None or now - self._token_read_at > TOKEN_FILE_REFRESH:
            try:
                self._token = Path(self._token_file).read_text().strip()
            except OSError as exc:
                if self._token is None:
                    raise kcfg.KubeconfigError(f"cannot read token file {self._token_file}: {exc}") from None
                log.warning("cannot re-read token file %s: %s", self._token_file, exc)
            self._token_read_at = now
        return self._token

    def _path(self, rt: ResourceType, namespace: str | None, name: str | None = None,
              subresource: str | None = None) -> str:
        path = rt.base_path(namespace if rt.namespaced else None)
        if name is not None:
            if not name:
                raise errors.bad_request("resource name may not be empty")
            path += "/" + quote(name, safe="")
            if subresource:
                path += "/" + subresource
        return path

    async def _request(self, method: str, path: str, *, rt: ResourceType | None, name: str = "",
                       params: list[tuple[str, str]] | None = None, body: Any = None,
                       content_type: str = "application/json") -> Any:
        session = self._get_session()
        if body is None or isinstance(body, bytes | bytearray):
            data = body
        else:
            data = orjson.dumps(body)
        kwargs: dict[str, Any] = {}
        if self.tls_server_name:
            kwargs["server_hostname"] = self.tls_server_name
        async with session.request(method, self.server + path, params=params or None, data=data,
                                   headers=self._headers(content_type if data is not None else None),
                                   timeout=aiohttp.ClientTimeout(total=self.timeout), **kwargs) as resp:
            raw = await resp.read()
            for warning in resp.headers.getall("Warning", ()):
                log.debug("server warning: %s", warning)
            if resp.status >= 400:
                raise _error_from_response(resp.status, method, rt, name, raw, _retry_after(resp.headers))
            if not raw:
                return {}
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise ApiError(errors.status(
                    500, "InternalError",
                    f"the server returned a body that is not JSON ({method.lower()} {path})")) from None

    @staticmethod
    def _write_params(dry_run: bool, field_manager: str | None, force: bool | None = None) -> list[tuple[str, str]]:
        params: list[tuple[str, str]] = []
        if dry_run:
            params.append(("dryRun", "All"))
        if field_manager:
            params.append(("fieldManager", field_manager))
        if force is not None:
            params.append(("force", _bool(force)))
        return params

    @staticmethod
    def _list_params(label_selector: str | None, field_selector: str | None) -> list[tuple[str, str]]:
        params: list[tuple[str, str]] = []
        if label_selector:
            params.append(("labelSelector", label_selector))
        if field_selector:
            params.append(("fieldSelector", field_selector))
        return params

    # -- Client ----------------------------------------------------------------------------------

    async def get(self, resource: str, name: str, *, namespace: str = "", subresource: str | None = None) -> Obj:
        rt = await self._resolve(resource)
        return await self._request("GET", self._path(rt, namespace, name, subresource), rt=rt, name=name)

    async def list(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None) -> Obj:
        rt = await self._resolve(resource)
        params = self._list_params(label_selector, field_selector)
        if limit:
            params.append(("limit", str(limit)))
        if continue_token:
            params.append(("continue", continue_token))
        if resource_version is not None:
            params.append(("resourceVersion", resource_version))
        return await self._request("GET", self._path(rt, namespace), rt=rt, params=params)

    async def create(self, resource: str, obj: Obj, *, namespace: str | None = None, dry_run: bool = False,
                     field_manager: str | None = None, handed_over: bool = False, typed: bool = False) -> Obj:
        # (handed_over: the body is encoded, never kept; typed: the server checks what it decodes)
        rt = await self._resolve(resource)
        md = obj.get("metadata") or {}
        ns = namespace or md.get("namespace") or self.namespace
        return await self._request("POST", self._path(rt, ns), rt=rt, name=md.get("name") or "",
                                   params=self._write_params(dry_run, field_manager), body=obj)

    async def update(self, resource: str, obj: Obj, *, subresource: str | None = None, dry_run: bool = False,
                     field_manager: str | None = None) -> Obj:
        rt = await self._resolve(resource)
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        ns = md.get("namespace") or self.namespace
        return await self._request("PUT", self._path(rt, ns, name, subresource), rt=rt, name=name,
                                   params=self._write_params(dry_run, field_manager), body=obj)

    async def patch(self, resource: str, name: str, patch: Any, *, namespace: str = "", patch_type: str = "merge",
                    subresource: str | None = None, field_manager: str | None = None, force: bool | None = None,
                    dry_run: bool = False) -> Obj:
        rt = await self._resolve(resource)
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise errors.unsupported_media_type(patch_type) from None
        params = self._write_params(dry_run, field_manager, force if patch_type == "apply" else None)
        if isinstance(patch, str):
            patch = patch.encode()  # a ready-made document (YAML for apply) goes out as is
        return await self._request("PATCH", self._path(rt, namespace, name, subresource), rt=rt, name=name,
                                   params=params, body=patch, content_type=content_type)

    async def delete(self, resource: str, name: str, *, namespace: str = "", grace_period_seconds: int | None = None,
                     propagation_policy: str | None = None, preconditions: dict[str, str] | None = None,
                     dry_run: bool = False) -> Obj:
        rt = await self._resolve(resource)
        options = delete_options(grace_period_seconds=grace_period_seconds, propagation_policy=propagation_policy,
                                 preconditions=preconditions, dry_run=dry_run)
        return await self._request("DELETE", self._path(rt, namespace, name), rt=rt, name=name, body=options)

    async def delete_collection(self, resource: str, *, namespace: str | None = None,
                                label_selector: str | None = None, field_selector: str | None = None) -> Obj:
        rt = await self._resolve(resource)
        return await self._request("DELETE", self._path(rt, namespace), rt=rt,
                                   params=self._list_params(label_selector, field_selector))

    async def create_subresource(self, resource: str, name: str, subresource: str, body: Obj, *,
                                 namespace: str = "") -> Obj:
        rt = await self._resolve(resource)
        return await self._request("POST", self._path(rt, namespace, name, subresource), rt=rt, name=name, body=body)

    async def watch(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                    field_selector: str | None = None, resource_version: str | None = None,
                    allow_bookmarks: bool = True, timeout_seconds: int | None = None,
                    send_initial_events: bool | None = None) -> AsyncIterator[Obj]:
        rt = await self._resolve(resource)
        params = [("watch", "true"), *self._list_params(label_selector, field_selector)]
        if resource_version is not None:
            params.append(("resourceVersion", resource_version))
        if allow_bookmarks:
            params.append(("allowWatchBookmarks", "true"))
        if timeout_seconds is not None:
            params.append(("timeoutSeconds", str(int(timeout_seconds))))
        if send_initial_events is not None:
            params.append(("sendInitialEvents", _bool(send_initial_events)))
            if send_initial_events:
                params.append(("resourceVersionMatch", "NotOlderThan"))
        session = self._get_session()
        kwargs: dict[str, Any] = {}
        if self.tls_server_name:
            kwargs["server_hostname"] = self.tls_server_name
        resp = await session.get(self.server + self._path(rt, namespace), params=params, headers=self._headers(),
                                 timeout=aiohttp.ClientTimeout(total=None, connect=self.timeout,
                                                               sock_connect=self.timeout), **kwargs)
        try:
            if resp.status >= 400:
                raw = await resp.read()
                raise _error_from_response(resp.status, "GET", rt, "", raw, _retry_after(resp.headers))
            buf = bytearray()
            async for chunk in resp.content.iter_any():
                buf += chunk
                start = 0
                while True:
                    nl = buf.find(b"\n", start)
                    if nl < 0:
                        break
                    line = bytes(buf[start:nl])
                    start = nl + 1
                    if line.strip():
                        yield _decode_event(line)
                if start:
                    del buf[:start]
            if bytes(buf).strip():
                yield _decode_event(bytes(buf))
        finally:
            resp.close()

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _decode_event(line: bytes) -> Obj:
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise ApiError(errors.status(500, "InternalError", "unable to decode an event from the watch stream")) from None
    if not isinstance(ev, dict):
        raise ApiError(errors.status(500, "InternalError", "unable to decode an event from the watch stream"))
    if ev.get("type") == "ERROR":
        obj = ev.get("object")
        if isinstance(obj, dict) and obj.get("kind") == "Status":
            raise ApiError(obj)
        raise ApiError(errors.status(500, "InternalError", f"watch error: {obj!r}"))
    return ev
