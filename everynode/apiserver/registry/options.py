"""Request options and their checks: what every resource's REST storage reads besides the body.

Why one module: the option rules are upstream's ``ValidateListOptions``, ``validateWatchOptions``,
``ValidateDeleteOptions`` and the patch-options checks of ``staging/src/k8s.io/apiserver/pkg/
endpoints/handlers`` — the same for every resource, so the generic store and the subresource
storages (binding, eviction) share them instead of each re-checking.  Bad options are a 422 on
the options' own kind (``ListOptions``, ``DeleteOptions``, ``PatchOptions`` in ``meta.k8s.io``),
nothing else happens.
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api.meta import field_of
from everynode.api.rbac import UserInfo
from everynode.api.registry import ResourceType
from everynode.api.selectable_fields import check_field_selector, selectable_fields
from everynode.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from everynode.apiserver.authorization import ADMIN
from everynode.storage.base import Predicate

Obj = dict[str, Any]

PATCH_TYPES: Final = ("json", "merge", "strategic", "apply")
PROPAGATION_POLICIES: Final = ("Foreground", "Background", "Orphan")


class RequestOptions:
    """Per-request options from the query string / headers (or the in-process caller).

    A plain class rather than a dataclass: every request makes one, and a dataclass's generated
    ``__init__`` runs interpreted even where the class is compiled (this module is, compiled.py)."""

    def __init__(self, *, dry_run: bool = False, field_manager: str | None = None,
                 field_validation: str | None = None, force: bool = False, user: str = "admin",
                 requester: UserInfo = ADMIN, user_agent: str = "", warnings: list[str] | None = None,
                 borrowed: bool = False, typed: bool = False) -> None:
        self.dry_run = dry_run
        self.field_manager = field_manager
        self.field_validation = field_validation  # "Strict" | "Warn" | "Ignore" | None (= server default, Warn)
        self.force = force  # server-side apply
        self.user = user
        # Who asks, as authentication and impersonation left it (the reviews answer for them).
        self.requester = requester
        self.user_agent = user_agent
        # Filled by the service; sent as Warning headers.
        self.warnings: list[str] = [] if warnings is None else warnings
        # The body is the caller's own, uncopied (the in-process client's status writes and
        # creates): it may share containers with the caller and with the stored object, so the
        # store copies what its pipeline would change (copies.py ``borrowed_copy``; a create
        # answered from its template copies only the pod's own template fields, templates.py)
        # instead of the client copying all.
        self.borrowed = borrowed
        # The body comes from a typed client, as upstream's components' Go structs are: it cannot
        # hold a badly typed value or an unknown field, so decoding does not look for them
        # (decode.py).  Only plan's copy says so, of its components' clients (controlplane.py).
        self.typed = typed


def client_options(user: str, user_agent: str, typed: bool, dry_run: bool, field_manager: str | None,
                   force: bool) -> RequestOptions:
    """The in-process client's RequestOptions, made here by a call with positional arguments:
    interpreted code constructing this compiled class with keywords goes through the generic
    argument parser, about 7,500 instructions a request (2% of a virtual-time rollout)."""
    return RequestOptions(dry_run=dry_run, field_manager=field_manager, force=force, user=user,
                          user_agent=user_agent, typed=typed)


def options_invalid(kind: str, errs: list[fielderr.FieldError]) -> errors.ApiError:
    """``errors.NewInvalid(GroupKind{meta.k8s.io, kind}, "", errs)`` for bad request options."""
    return errors.invalid(kind, "meta.k8s.io", "", errs)


def parse_rv(text: str | None) -> int | None:
    """A resourceVersion parameter: None when absent, 400 when not a non-negative integer."""
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise errors.bad_request(f"invalid resource version: {text}") from None
    if value < 0:
        raise errors.bad_request(f"invalid resource version: {text}")
    return value


def too_large_rv(requested: int, current: int) -> errors.ApiError:
    return errors.ApiError(errors.status(
        504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
        {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
         "retryAfterSeconds": 1}))


def manager(opts: RequestOptions) -> str:
    """``managerOrUserAgent``: the fieldManager, else the user agent up to its first ``/``."""
    if opts.field_manager:
        return opts.field_manager
    agent = opts.user_agent.split("/", 1)[0][:128]
    return agent or "unknown"


def selection_predicate(rt: ResourceType, label_selector: str | None,
                        field_selector: str | None) -> tuple[Predicate | None, str | None]:
    """The object filter for selectors, plus the exact ``metadata.name`` asked for (if any).

    Raises 400 for selectors that do not parse or name unsupported fields."""
    labels = fields = None
    try:
        if label_selector:
            labels = parse_label_selector(label_selector)
            if labels.empty:
                labels = None
        if field_selector:
            fields = parse_field_selector(field_selector)
            if fields.empty:
                fields = None
            else:
                check_field_selector(rt.key, fields)
    except SelectorError as e:
        raise errors.bad_request(str(e)) from None
    if labels is None and fields is None:
        return None, None
    exact_name = fields.exact_value("metadata.name") if fields is not None else None
    key = rt.key
    if fields is None:
        assert labels is not None  # one of the two is set (returned above otherwise)
        label_match = labels.matches
        return (lambda obj: label_match(field_of(obj["metadata"], "labels"))), exact_name
    field_match = fields.matches
    if labels is None:
        return (lambda obj: field_match(selectable_fields(key, obj))), exact_name
    label_match = labels.matches

    def both(obj: Obj) -> bool:
        return label_match(field_of(obj["metadata"], "labels")) and field_match(selectable_fields(key, obj))

    return both, exact_name


def check_list_options(rv: str | None, match: str | None, continue_token: str | None) -> None:
    """``ValidateListOptions`` for a list."""
    errs: list[fielderr.FieldError] = []
    if match:
        if not rv:
            errs.append(fielderr.forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if continue_token:
            errs.append(fielderr.forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden when continue is provided"))
        if match not in ("Exact", "NotOlderThan"):
            errs.append(fielderr.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        if match == "Exact" and rv == "0":
            errs.append(fielderr.forbidden("resourceVersionMatch",
                                           'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if errs:
        raise options_invalid("ListOptions", errs)


def check_watch_options(match: str | None, send_initial_events: bool | None) -> None:
    """``validateWatchOptions``: ``sendInitialEvents`` goes with ``resourceVersionMatch=NotOlderThan``."""
    errs: list[fielderr.FieldError] = []
    if send_initial_events is not None and match != "NotOlderThan":
        errs.append(fielderr.forbidden("resourceVersionMatch",
                                       "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
    if match:
        if send_initial_events is None:
            errs.append(fielderr.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch "
                                                                  "unless sendInitialEvents is provided"))
        if match != "NotOlderThan":
            errs.append(fielderr.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
    if errs:
        raise options_invalid("ListOptions", errs)


def check_patch_options(patch_type: str, opts: RequestOptions) -> None:
    """``PatchOptions``: apply needs a fieldManager, force is apply's alone."""
    errs: list[fielderr.FieldError] = []
    if patch_type == "apply" and not opts.field_manager:
        errs.append(fielderr.required("fieldManager", "is required for apply patch"))
    if patch_type != "apply" and opts.force:
        errs.append(fielderr.forbidden("force", "may not be specified for non-apply patch"))
    if errs:
        raise options_invalid("PatchOptions", errs)


def delete_options(options: Obj | None, opts: RequestOptions) -> Obj:
    """``ValidateDeleteOptions``, then the options as the delete path reads them (a private copy;
    ``dryRun`` moves into ``opts``, a negative grace period becomes 1 as upstream rounds it)."""
    options = dict(options) if isinstance(options, dict) else {}
    errs: list[fielderr.FieldError] = []
    policy = options.get("propagationPolicy")
    if policy is not None:
        if options.get("orphanDependents") is not None:
            errs.append(fielderr.invalid("propagationPolicy", policy,
                                         "orphanDependents and deletionPropagation cannot be both set"))
        if policy not in PROPAGATION_POLICIES:
            errs.append(fielderr.not_supported("propagationPolicy", policy, list(PROPAGATION_POLICIES)))
    dry_run = options.get("dryRun") or []
    if isinstance(dry_run, str):
        dry_run = [dry_run]
    for i, value in enumerate(dry_run):
        if value != "All":
            errs.append(fielderr.not_supported(f"dryRun[{i}]" if len(dry_run) > 1 else "dryRun", value, ["All"]))
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
        errs.append(fielderr.invalid("gracePeriodSeconds", grace, "must be an integer"))
    if errs:
        raise options_invalid("DeleteOptions", errs)
    if dry_run:
        opts.dry_run = True
    if grace is not None and grace < 0:
        options["gracePeriodSeconds"] = 1
    return options
