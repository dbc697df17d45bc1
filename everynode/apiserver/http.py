"""The Kubernetes REST surface over HTTP(S): routing, authentication, content negotiation, watch
streaming.  All semantics live in :class:`~everynode.apiserver.service.ApiService`; this module
only translates requests and responses, the way kube-apiserver's
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers`` do.

Choices and their reasons:

* **One catch-all route, parsed by hand.**  Kubernetes paths are regular
  (``/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]``, the same under
  ``/apis/{group}/{version}``) and the registry already knows every resource; splitting the
  path is cheaper than aiohttp's router with a few hundred patterns and keeps unknown paths and
  unknown subresources (``daemonsets/x/scale``) on the one 404 answer kubectl expects.
* **Bearer token on every path** except the probes ``/healthz``, ``/livez``, ``/readyz`` and
  ``/version``, which upstream grants to anonymous users through the ``system:public-info-viewer``
  role.  A request that presents a wrong token is not anonymous (upstream's authenticator chain
  fails on error before it falls back to anonymous): 401 there too.
* **Content negotiation as kubectl needs it** (kubectl-contract.md §1, §5, §8): JSON, YAML and
  Kubernetes-protobuf request bodies, the four PATCH types, ``as=Table`` responses; JSON
  answers to everything else (clients decode by the response Content-Type).
* **Watch: encode each event once.**  Store events are shared by every watcher, and their
  ``encoded`` dict caches the wire bytes per representation, so a fan-out to N watchers costs
  one encoding plus N socket writes (python-stack.md §1).  Table watches send the column
  definitions on their first event only, like upstream; that one line is per watcher.  The
  service hands a watch over in batches (every event ready when the stream's task runs), and a
  batch goes out as one chunk, so a stream that fell behind catches up with one socket write
  instead of one per event (storage/watch.py explains the waking).
* **Never a traceback to the client**: any unexpected exception becomes a 500 ``InternalError``
  Status plus a log line.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
import yaml
from aiohttp import web

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api.builtin_kinds import DEPRECATED
from everynode.api.impersonation import impersonate
from everynode.api.names import name_is_path_segment
from everynode.api.rbac import UserInfo, forbidden_error, with_authenticated_group
from everynode.api.registry import ResourceType, by_version
from everynode.api.request_info import RequestInfoError, request_attributes
from everynode.apiserver import discovery, openapi, tables
from everynode.apiserver.authorization import ADMIN, RBAC
from everynode.apiserver.decoding import JSON, MAX_BODY_BYTES, YAML, check_size, decode_body, decode_patch
from everynode.apiserver.decoding import media_type as _media_type
from everynode.apiserver.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from everynode.apiserver.metrics import ApiRequestMetrics
from everynode.apiserver.registry.core.pod import log as pod_log
from everynode.apiserver.registry.core.pod import streaming as pod_streaming
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.apiserver.serviceaccount_tokens import InvalidToken
from everynode.storage.base import WatchEvent

log = logging.getLogger(__name__)

CACHE_CONTROL = "no-cache, private"
TABLE_CONTENT_TYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"
_REQUESTER: Any = (web.RequestKey("everynode_requester", UserInfo) if hasattr(web, "RequestKey")
                   else "everynode_requester")
_AUTHENTICATED: Any = (web.RequestKey("everynode_authenticated", UserInfo) if hasattr(web, "RequestKey")
                       else "everynode_authenticated")
OPEN_PATHS = ("/healthz", "/livez", "/readyz", "/version")
REQUEST_TIMEOUT = 60.0  # --request-timeout: a non-watch request is answered 504 after this
REQUEST_TIMEOUT_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"
# The named checks of kube-apiserver's /livez/<name> and /readyz/<name> that mean something here.
PROBE_CHECKS = {"healthz": ("ping", "log", "etcd"), "livez": ("ping", "log", "etcd"),
                "readyz": ("ping", "log", "etcd", "informer-sync", "shutdown")}
FIELD_VALIDATION = ("", "Ignore", "Warn", "Strict")

VERSION_INFO = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0",
    "gitCommit": "60a317eadfcb839692a5551a6e1a4d0e0a1a2c3f",
    "gitTreeState": "clean",
    "buildDate": "2025-04-23T00:00:00Z",
    "goVersion": "go1.24.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}


# ---------------------------------------------------------------------------------------------
# small parsers


def go_bool(value: str | None) -> bool:
    """A query boolean as the apiserver converts it: only ``false``/``0`` are false (any case)."""
    if value is None:
        return False
    return value.strip().lower() not in ("false", "0")


def _int(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def _accept_parts(accept: str) -> list[tuple[str, dict[str, str]]]:
    parts = []
    for part in accept.split(","):
        pieces = part.split(";")
        params = {}
        for p in pieces[1:]:
            k, _, v = p.strip().partition("=")
            params[k.strip()] = v.strip()
        parts.append((pieces[0].strip().lower(), params))
    return parts


def wants_table(accept: str) -> bool:
    if "as=Table" not in accept:
        return False
    return any(p.get("as") == "Table" and p.get("g") == "meta.k8s.io" for _, p in _accept_parts(accept))


def wants_yaml(accept: str) -> bool:
    parts = _accept_parts(accept)
    return bool(parts) and parts[0][0] == YAML


def _quote(text: str) -> str:
    return orjson.dumps(text).decode()


# ---------------------------------------------------------------------------------------------
# responses


def _headers(response: web.StreamResponse, warnings: list[str] | None = None) -> None:
    response.headers["Cache-Control"] = CACHE_CONTROL
    for text in warnings or ():
        response.headers.add("Warning", f"299 - {_quote(text)}")


def json_response(obj: Any, *, status: int = 200, content_type: str = JSON,
                  warnings: list[str] | None = None, encoded: bytes | None = None) -> web.Response:
    body = encoded if encoded is not None else orjson.dumps(obj)
    response = web.Response(body=body, status=status)
    response.headers["Content-Type"] = content_type
    _headers(response, warnings)
    return response


def status_response(status: dict[str, Any], warnings: list[str] | None = None) -> web.Response:
    return json_response(status, status=int(status.get("code") or 500), warnings=warnings)


def text_response(text: str, *, status: int = 200) -> web.Response:
    response = web.Response(text=text, status=status, content_type="text/plain")
    response.headers["X-Content-Type-Options"] = "nosniff"
    _headers(response)
    return response


# ---------------------------------------------------------------------------------------------
# the application


class Request:
    """A parsed resource request."""

    __slots__ = ("rt", "namespace", "name", "subresource")

    def __init__(self, rt: ResourceType, namespace: str | None, name: str | None, subresource: str | None):
        self.rt = rt
        self.namespace = namespace
        self.name = name
        self.subresource = subresource


class ApiHttp:
    """The request handler bound to one service and one token."""

    def __init__(self, service: ApiService, *, token: str | None,
                 ready_check: Callable[[], bool] | None = None, server_address: str = "127.0.0.1:6443",
                 metrics: ApiRequestMetrics | None = None):
        self.service = service
        self.metrics = metrics if metrics is not None else ApiRequestMetrics()
        self.token = token.encode() if token else None
        self.ready_check = ready_check
        self.ready = True
        self.server_address = server_address
        self.request_timeout = REQUEST_TIMEOUT
        self.rbac = service.authorizer.mode == RBAC

    # -- entry point ----------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        warnings: list[str] = []
        started = time.perf_counter()
        try:
            if _long_running(request):
                response = await self._dispatch(request, warnings)  # a watch keeps its own lifetime
            else:
                async with asyncio.timeout(_request_timeout(request.query.get("timeout"), self.request_timeout)):
                    response = await self._dispatch(request, warnings)
        except TimeoutError:
            response = status_response(errors.timeout(REQUEST_TIMEOUT_MESSAGE).status)
        except errors.ApiError as e:
            response = status_response(e.status, warnings)
        except web.HTTPRequestEntityTooLarge:
            response = status_response(errors.request_too_large(MAX_BODY_BYTES).status)
        except (ConnectionResetError, web.HTTPException):
            raise
        except Exception as e:  # never a traceback to the client
            log.exception("%s %s failed", request.method, request.path_qs)
            response = status_response(errors.internal(f"{type(e).__name__}: {e}").status)
        labels = request.get(_METRIC_LABELS)
        if labels is not None:
            self.metrics.observe(**labels, code=response.status, seconds=time.perf_counter() - started)
        return response

    def _requester(self, request: web.Request) -> UserInfo:
        """The user the request acts as: the token's (the admin's or a service account's), or
        whom ``Impersonate-*`` headers name once that user may impersonate them
        (``WithImpersonation``).  Resolved once per request, and only where it matters: every
        request under RBAC, writes and the reviews otherwise."""
        user = request.get(_REQUESTER)
        if user is None:
            user = request.get(_AUTHENTICATED) or ADMIN
            if any(name[:12].lower() == "impersonate-" for name in request.headers):
                user = impersonate(user, request.headers.items(), self.service.authorizer.authorize) or user
            request[_REQUESTER] = user
        return user

    def _authorize(self, request: web.Request, path: str) -> web.Response | None:
        """``WithAuthorization`` under ``--authorization rbac``: the request's attributes
        (``WithRequestInfo``), then the authorizer; a 403 Status when it is not allowed."""
        user = self._requester(request)
        try:
            attrs = request_attributes(user, request.method, path,
                                       {k: request.query.getall(k) for k in request.query})
        except RequestInfoError as e:
            return text_response(f'Internal Server Error: "{request.path_qs}": failed to create RequestInfo: {e}',
                                 status=500)
        answer = self.service.authorizer.authorize(attrs)
        if not answer.allowed:
            raise forbidden_error(attrs, answer.reason)
        return None

    def _credential(self, request: web.Request) -> bool | None:
        """True for a bearer token that authenticates (the admin's, or a service account's
        token that TokenRequest signed, ``serviceaccount_tokens.py``), False for one that does
        not, None when none is presented.  The user it names is kept on the request.

        Parsed as upstream's bearertoken authenticator does: the trimmed header split on spaces,
        a case-insensitive ``bearer`` scheme, the second field the token; any other header
        (Basic, a bare ``Bearer``, an empty token) presents no bearer token at all."""
        if self.token is None:
            return True
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        if peer:  # verified against the cluster CA by the TLS layer (x509 comes first upstream)
            user = client_certificate_user(peer)
            if user is not None:
                request[_AUTHENTICATED] = user
                return True
        parts = request.headers.get("Authorization", "").strip().split(" ")
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return None
        if hmac.compare_digest(parts[1].encode("utf-8", "backslashreplace"), self.token):
            return True
        service = self.service
        try:
            user = service.context.tokens.authenticate(parts[1], service.store, now=service.clock.now())
        except InvalidToken as e:
            log.info("service account token refused: %s", e)
            return False
        if user is None:
            return False
        request[_AUTHENTICATED] = user
        return True

    async def _dispatch(self, request: web.Request, warnings: list[str]) -> web.StreamResponse:
        path = request.path
        if len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/")
        credential = self._credential(request)
        if credential is False:  # a wrong token is never anonymous, not even on the probes
            raise errors.unauthorized()
        if path.startswith(OPEN_PATHS):
            response = self._open_endpoint(path)
            if response is not None:
                return response
        if not credential:
            raise errors.unauthorized()
        if self.rbac:
            forbidden = self._authorize(request, path)
            if forbidden is not None:
                return forbidden
        parts = [p for p in path.split("/") if p]
        if not parts:
            return json_response({"paths": self._root_paths()})
        head = parts[0]
        if head == "api":
            return await self._group_path(request, "", parts[1:], warnings)
        if head == "apis":
            if len(parts) == 1:
                return self._discovery_root(request, core=False)
            return await self._group_path(request, parts[1], parts[2:], warnings)
        if head == "openapi":
            return self._openapi(parts[1:])
        if parts == ["metrics"]:
            response = web.Response(body=self.metrics.exposition())
            response.headers["Content-Type"] = METRICS_CONTENT_TYPE
            _headers(response)
            return response
        raise errors.path_not_found()

    # -- non-resource endpoints -----------------------------------------------------------------

    def _open_endpoint(self, path: str) -> web.Response | None:
        if path == "/version":
            return json_response(VERSION_INFO)
        parts = path.split("/")
        probe = parts[1]
        if probe not in ("healthz", "livez", "readyz"):
            return None
        if len(parts) > 2 and (len(parts) > 3 or parts[2] not in PROBE_CHECKS[probe]):
            raise errors.path_not_found()  # /livez/<unknown>: 404, as upstream's mux
        if len(parts) > 2 and parts[2] != "etcd":
            return text_response("ok")  # ping, log, informer-sync, shutdown: this process answers
        if probe != "healthz" and not self._is_ready():
            return text_response(f"[-]everynode failed: reason withheld\n{probe} check failed", status=500)
        return text_response("ok")

    def _is_ready(self) -> bool:
        if not self.ready:
            return False
        if self.ready_check is not None:
            try:
                return bool(self.ready_check())
            except Exception:
                log.exception("ready check failed")
                return False
        return True

    def _root_paths(self) -> list[str]:
        paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/openapi/v3", "/readyz",
                 "/version"]
        for group, version, _ in discovery.named_groups():
            paths.extend([f"/apis/{group}", f"/apis/{group}/{version}"])
        return sorted(paths)

    def _discovery_root(self, request: web.Request, *, core: bool) -> web.Response:
        version = discovery.negotiate_aggregated(request.headers.get("Accept", ""))
        if version is not None:
            content_type = discovery.AGGREGATED_V2 if version == "v2" else discovery.AGGREGATED_V2BETA1
            return json_response(None, content_type=content_type, encoded=discovery.aggregated(core, version))
        if core:
            return json_response(None, encoded=discovery.api_versions(self.server_address))
        return json_response(None, encoded=discovery.api_group_list())

    def _openapi(self, parts: list[str]) -> web.Response:
        if parts == ["v2"]:
            response = web.Response(body=openapi.v2_body(), status=200)
            response.headers["Content-Type"] = openapi.V2_CONTENT_TYPE
            _headers(response)
            return response
        if parts == ["v3"]:
            return json_response(openapi.v3_root())
        if len(parts) > 1 and parts[0] == "v3":
            doc = openapi.v3_document("/".join(parts[1:]))
            if doc is not None:
                response = json_response(None, encoded=doc[0])
                response.headers["Etag"] = f'"{doc[1]}"'
                return response
        raise errors.path_not_found()

    # -- resources ------------------------------------------------------------------------------

    async def _group_path(self, request: web.Request, group: str, rest: list[str],
                          warnings: list[str]) -> web.StreamResponse:
        if not rest:
            if not group:
                return self._discovery_root(request, core=True)
            body = discovery.api_group(group)
            if body is None:
                raise errors.path_not_found()
            return json_response(None, encoded=body)
        version, rest = rest[0], rest[1:]
        if not rest:
            body = discovery.api_resource_list(group, version)
            if body is None:
                raise errors.path_not_found()
            return json_response(None, encoded=body)
        parsed = self._parse_resource_path(group, version, rest)
        return await self._resource(request, parsed, warnings)

    @staticmethod
    def _parse_resource_path(group: str, version: str, rest: list[str]) -> Request:
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            candidate = by_version(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        rt = by_version(group, version, rest[0])
        if rt is None or len(rest) > 3:
            raise errors.path_not_found()
        if namespace is not None and not rt.namespaced:
            raise errors.path_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if name is not None and (msgs := name_is_path_segment(name)):  # upstream's NamespaceKeyFunc / NoNamespaceKeyFunc
            raise errors.bad_request(f'Name parameter invalid: "{name}": {";".join(msgs)}')
        if rt.namespaced and name is not None and namespace is None:
            raise errors.path_not_found()
        return Request(rt, namespace, name, sub)

    async def _resource(self, request: web.Request, req: Request, warnings: list[str]) -> web.StreamResponse:
        method = request.method
        query = request.query
        rt = req.rt
        request[_METRIC_LABELS] = _metric_labels(req, method, query, request.headers.get("Content-Type"))
        deprecation = DEPRECATED.get((rt.api_version, rt.kind))
        if deprecation is not None:  # installer.go: every verb of a deprecated kind warns
            warnings.append(deprecation)
        if req.name is None:
            if method == "GET":
                if go_bool(query.get("watch")):
                    return await self._watch(request, req, warnings)
                return await self._list(request, req, warnings)
            if method == "POST":
                if rt.namespaced and req.namespace is None:
                    raise errors.method_not_allowed("create", rt.plural, rt.group)
                return await self._create(request, req, warnings)
            if method == "DELETE":
                return await self._delete_collection(request, req, warnings)
            raise errors.method_not_allowed(method.lower(), rt.plural, rt.group)
        if not rt.group and rt.plural == "pods" and req.subresource == "log" and method == "GET":
            return await pod_log.serve_log(request, self.service, rt, req.namespace or "", req.name)
        if not rt.group and rt.plural == "pods" and req.subresource in pod_streaming.STREAMING_SUBRESOURCES:
            await pod_streaming.refuse(self.service, rt, req.namespace or "", req.name, req.subresource)
        if method == "GET":
            obj = await self.service.get(rt, req.namespace or "", req.name, subresource=req.subresource)
            return self._object_response(request, rt, obj, 200, warnings)
        if method == "PUT":
            return await self._update(request, req, warnings)
        if method == "PATCH":
            return await self._patch(request, req, warnings)
        if method == "DELETE" and req.subresource is None:
            return await self._delete(request, req, warnings)
        if method == "POST" and req.subresource is not None:
            return await self._create_subresource(request, req, warnings)
        if req.subresource is not None and rt.subresource(req.subresource) is None:
            raise errors.path_not_found()
        raise errors.method_not_allowed(method.lower(), rt.plural, rt.group)

    # -- encoding -------------------------------------------------------------------------------

    def _object_response(self, request: web.Request, rt: ResourceType, obj: Any, status: int,
                         warnings: list[str]) -> web.Response:
        accept = request.headers.get("Accept", "")
        if obj.get("kind") != "Status" and wants_table(accept):
            table = tables.to_table(rt, [obj], now=self.service.clock.now(),
                                    resource_version=obj["metadata"].get("resourceVersion", ""),
                                    include_object=_include_object(request))
            return json_response(table, status=status, content_type=TABLE_CONTENT_TYPE, warnings=warnings)
        if wants_yaml(accept):
            response = web.Response(text=yaml.safe_dump(obj, sort_keys=False), status=status)
            response.headers["Content-Type"] = YAML
            _headers(response, warnings)
            return response
        return json_response(obj, status=status, warnings=warnings)

    # -- verbs ----------------------------------------------------------------------------------

    async def _list(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        query = request.query
        rt = req.rt
        result = await self.service.list(
            rt, req.namespace, label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"), limit=_int(query, "limit"),
            continue_token=query.get("continue"), resource_version=query.get("resourceVersion"),
            resource_version_match=query.get("resourceVersionMatch"))
        if wants_table(request.headers.get("Accept", "")):
            table = tables.to_table(rt, result["items"], now=self.service.clock.now(),
                                    resource_version=result["metadata"].get("resourceVersion", ""),
                                    include_object=_include_object(request))
            if "continue" in result["metadata"]:
                table["metadata"]["continue"] = result["metadata"]["continue"]
                if "remainingItemCount" in result["metadata"]:
                    table["metadata"]["remainingItemCount"] = result["metadata"]["remainingItemCount"]
            return json_response(table, content_type=TABLE_CONTENT_TYPE, warnings=warnings)
        return self._object_response(request, rt, result, 200, warnings)

    def _options(self, request: web.Request, kind: str) -> RequestOptions:
        query = request.query
        errs: list[fielderr.FieldError] = []
        dry_run = query.getall("dryRun", [])
        for value in dry_run:
            if value != "All":
                errs.append(fielderr.not_supported("dryRun", value, ["All"]))
        validation = query.get("fieldValidation", "")
        if validation not in FIELD_VALIDATION:
            errs.append(fielderr.not_supported("fieldValidation", validation, list(FIELD_VALIDATION)))
        manager = query.get("fieldManager") or None
        if manager is not None and len(manager) > 128:
            errs.append(fielderr.too_long("fieldManager", 128))
        if errs:
            raise errors.invalid(kind, "meta.k8s.io", "", errs)
        return RequestOptions(dry_run=bool(dry_run), field_manager=manager,
                              field_validation=validation or None, force=go_bool(query.get("force")),
                              user_agent=request.headers.get("User-Agent", ""), requester=self._requester(request))

    async def _read_body(self, request: web.Request) -> bytes:
        check_size(request.content_length)
        return await request.read()

    async def _create(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        opts = self._options(request, "CreateOptions")
        body = decode_body(await self._read_body(request), request.headers.get("Content-Type"), kind=req.rt.kind)
        obj = await self.service.create(req.rt, req.namespace or "", body, opts=opts)
        warnings.extend(opts.warnings)
        return self._object_response(request, req.rt, obj, 201, warnings)

    async def _update(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        opts = self._options(request, "UpdateOptions")
        assert req.name is not None
        body = decode_body(await self._read_body(request), request.headers.get("Content-Type"), kind=req.rt.kind)
        obj, created = await self.service.update(req.rt, req.namespace or "", req.name, body,
                                                 subresource=req.subresource, opts=opts)
        warnings.extend(opts.warnings)
        return self._object_response(request, req.rt, obj, 201 if created else 200, warnings)

    async def _patch(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        opts = self._options(request, "PatchOptions")
        assert req.name is not None
        patch, patch_type = decode_patch(await self._read_body(request), request.headers.get("Content-Type"))
        obj, created = await self.service.patch(req.rt, req.namespace or "", req.name, patch, patch_type,
                                                subresource=req.subresource, opts=opts)
        warnings.extend(opts.warnings)
        return self._object_response(request, req.rt, obj, 201 if created else 200, warnings)

    async def _delete_options(self, request: web.Request) -> tuple[dict[str, Any], RequestOptions]:
        query = request.query
        data = await self._read_body(request)
        options: dict[str, Any] = {}
        if data.strip():
            decoded = decode_body(data, request.headers.get("Content-Type"), kind="DeleteOptions")
            if not isinstance(decoded, dict):
                raise errors.bad_request("the object provided is unrecognized (must be of type DeleteOptions)")
            options = decoded
        grace = _int(query, "gracePeriodSeconds")
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        if query.get("propagationPolicy"):
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = go_bool(query.get("orphanDependents"))
        if "dryRun" in query:
            options["dryRun"] = query.getall("dryRun")
        opts = RequestOptions(user_agent=request.headers.get("User-Agent", ""))
        return options, opts

    async def _delete(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        assert req.name is not None
        options, opts = await self._delete_options(request)
        code, body = await self.service.delete(req.rt, req.namespace or "", req.name, options=options, opts=opts)
        warnings.extend(opts.warnings)
        return self._object_response(request, req.rt, body, code, warnings)

    async def _delete_collection(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        options, opts = await self._delete_options(request)
        query = request.query
        result = await self.service.delete_collection(
            req.rt, req.namespace, label_selector=query.get("labelSelector"),
            field_selector=query.get("fieldSelector"), options=options, opts=opts)
        warnings.extend(opts.warnings)
        return json_response(result, warnings=warnings)

    async def _create_subresource(self, request: web.Request, req: Request, warnings: list[str]) -> web.Response:
        assert req.name is not None and req.subresource is not None
        opts = self._options(request, "CreateOptions")
        sub = req.rt.subresource(req.subresource)
        body = decode_body(await self._read_body(request), request.headers.get("Content-Type"),
                           kind=sub.kind if sub is not None else req.rt.kind)
        code, result = await self.service.create_subresource(req.rt, req.namespace or "", req.name,
                                                             req.subresource, body, opts=opts)
        warnings.extend(opts.warnings)
        return json_response(result, status=code, warnings=warnings)

    # -- watch ----------------------------------------------------------------------------------

    async def _watch(self, request: web.Request, req: Request, warnings: list[str]) -> web.StreamResponse:
        query = request.query
        rt = req.rt
        await self.service.wait_for_resource_version(query.get("resourceVersion"))
        send_initial = go_bool(query.get("sendInitialEvents")) if "sendInitialEvents" in query else None
        timeout = _int(query, "timeoutSeconds")
        batches = self.service.watch_batches(
            rt, req.namespace, label_selector=query.get("labelSelector"), field_selector=query.get("fieldSelector"),
            resource_version=query.get("resourceVersion"), allow_bookmarks=go_bool(query.get("allowWatchBookmarks")),
            send_initial_events=send_initial, timeout_seconds=float(timeout) if timeout else None,
            resource_version_match=query.get("resourceVersionMatch"))
        table = wants_table(request.headers.get("Accept", ""))
        include_object = _include_object(request)
        response = web.StreamResponse(status=200)
        response.headers["Content-Type"] = TABLE_CONTENT_TYPE if table else JSON
        _headers(response, warnings)
        response.enable_chunked_encoding()
        await response.prepare(request)
        first = True
        clock = self.service.clock
        try:
            async for batch in batches:
                lines = []
                for event in batch:
                    if table and event.type in ("ADDED", "MODIFIED", "DELETED"):
                        if first:
                            line = self._table_event(rt, event, clock.now(), include_object, columns=True)
                            first = False
                        else:
                            key = f"table:{include_object}"
                            cached = event.encoded.get(key)
                            if cached is None:
                                cached = self._table_event(rt, event, clock.now(), include_object, columns=False)
                                event.encoded[key] = cached
                            line = cached
                    else:
                        cached = event.encoded.get("json")
                        if cached is None:
                            cached = orjson.dumps({"type": event.type, "object": event.object}) + b"\n"
                            event.encoded["json"] = cached
                        line = cached
                    lines.append(line)
                # Everything that was ready goes out as one chunk: one TLS record and one send.
                await response.write(lines[0] if len(lines) == 1 else b"".join(lines))
        except (ConnectionResetError, ConnectionError):
            pass
        finally:
            await batches.aclose()
        try:
            await response.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass
        return response

    @staticmethod
    def _table_event(rt: ResourceType, event: WatchEvent, now: float, include_object: str, *,
                     columns: bool) -> bytes:
        table = tables.to_table(rt, [event.object], now=now,
                                resource_version=event.object.get("metadata", {}).get("resourceVersion", ""),
                                include_object=include_object, include_columns=columns)
        return orjson.dumps({"type": event.type, "object": table}) + b"\n"


def _long_running(request: web.Request) -> bool:
    """Exempt from the request timeout, as kube-apiserver's ``longRunningRequestCheck``: watches
    and the streaming pod subresources (a followed log, exec, attach, port-forward)."""
    if "watch" in request.query and go_bool(request.query.get("watch")):
        return True
    return request.path.rsplit("/", 1)[-1] in ("log", *pod_streaming.STREAMING_SUBRESOURCES)


def client_certificate_user(peer: dict[str, Any]) -> UserInfo | None:
    """``x509.CommonNameUserConversion``: the subject's CN is the user, each O a group (in
    order); a certificate without a CN authenticates nobody."""
    name, groups = "", []
    for rdn in peer.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return with_authenticated_group(UserInfo(name, tuple(groups)))


def _request_timeout(value: str | None, default: float) -> float:
    """The ``?timeout=`` of a request (a Go duration such as ``30s`` or ``1m30s``), capped by the
    server's own; an unparsable one is ignored (the default applies)."""
    if not value:
        return default
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    i = 0
    while i < len(value):
        c = value[i]
        if c.isdigit() or c == ".":
            number += c
            i += 1
            continue
        unit = "ms" if value.startswith("ms", i) else c
        if unit not in units or not number:
            return default
        try:
            total += float(number) * units[unit]
        except ValueError:
            return default
        number = ""
        i += len(unit)
    if number or total <= 0:
        return default
    return min(total, default)


# aiohttp ≥3.12 wants typed request keys; older versions take a string.
_METRIC_LABELS: Any = (web.RequestKey("everynode_metric_labels", dict) if hasattr(web, "RequestKey")
                       else "everynode_metric_labels")


def _metric_labels(req: Request, method: str, query: Any, content_type: str | None) -> dict[str, str]:
    """``apiserver_request_*`` labels with upstream's cleaned verbs (LIST, WATCH, APPLY, ...)."""
    verb = method
    if req.name is None:
        if method == "GET":
            verb = "WATCH" if go_bool(query.get("watch")) else "LIST"
        elif method == "DELETE":
            verb = "DELETECOLLECTION"
        scope = "namespace" if req.namespace is not None else "cluster"
    else:
        if method == "PATCH" and _media_type(content_type) == "application/apply-patch+yaml":
            verb = "APPLY"
        scope = "resource"
    return {"verb": verb, "group": req.rt.group, "version": req.rt.version, "resource": req.rt.plural,
            "subresource": req.subresource or "", "scope": scope}


def _include_object(request: web.Request) -> str:
    value = request.query.get("includeObject") or "Metadata"
    if value not in ("None", "Metadata", "Object"):
        raise errors.bad_request(f'includeObject: Unsupported value: "{value}": supported values: '
                                 '"None", "Metadata", "Object"')
    return value


def build_app(service: ApiService, *, token: str | None, ready_check: Callable[[], bool] | None = None,
              server_address: str = "127.0.0.1:6443",
              metrics: ApiRequestMetrics | None = None) -> tuple[web.Application, ApiHttp]:
    """The aiohttp application (one catch-all route) and its handler object."""
    handler = ApiHttp(service, token=token, ready_check=ready_check, server_address=server_address,
                      metrics=metrics)
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_route("*", "/{tail:.*}", handler.handle)
    return app, handler
