"""The RBAC authorization decision, as kube-apiserver's RBAC authorizer makes it.

Upstream: ``plugin/pkg/auth/authorizer/rbac/rbac.go`` (``Authorize``, ``RuleAllows``,
``RulesFor``), ``pkg/apis/rbac/v1/evaluation_helpers.go`` (verb / group / resource / name / URL
matching), ``pkg/registry/rbac/validation/rule.go`` (``VisitRulesFor``, ``appliesTo``, the
"allowed by ..." source descriptions), ``staging/src/k8s.io/apiserver/pkg/authentication/
serviceaccount/util.go`` (service-account user names and groups) and the privileged-group
authorizer kube-apiserver puts before every other one (``system:masters`` is always allowed).

The shape of it:

* :class:`UserInfo` and :class:`Attributes` are upstream's ``user.Info`` and
  ``authorizer.Attributes`` — what the API server knows about one request.
* :class:`Rule` is a ``PolicyRule`` compiled once (frozensets and URL prefixes), because every
  request tests rules and a role changes rarely; :func:`rule_allows` is ``RuleAllows``.
* :class:`RuleSource` is what the decision reads: the bindings that may name a user, and the
  rules of a role by name.  :class:`RBACIndex` implements it over plain objects, keeping the
  bindings indexed by subject (user name, group name, service-account user name), so a request
  costs O(bindings naming the user or one of its groups), not a scan of every binding; the API
  server can keep one up to date from its watch/informer events (``upsert`` / ``delete``) or
  implement the protocol over its own caches.
* :func:`visit_bindings_for` is ``VisitRulesFor``: a generator (so stopping early is just not
  asking for more) over the bindings that apply to the user in a namespace — the
  ClusterRoleBindings first, then the namespace's RoleBindings — each with its role's rules in
  order, or the error for a binding whose role cannot be found.  :func:`authorize` and
  :func:`rules_for` (``SelfSubjectRulesReview``) are both walks over it, rule by rule.

Deliberate differences: upstream walks bindings in informer-cache order (a Go map, so in effect
arbitrary); we walk them in name order, so when two bindings allow a request the reason names
the first by name, reproducibly.  RBAC never denies (it has no opinion), exactly as upstream;
the only ``DENY`` is what other authorizers might add.

RBAC objects are plain JSON-shaped dicts as everywhere in the api layer; nothing here does I/O.

Wiring (for the API server): keep one :class:`RBACIndex` current from the four RBAC kinds'
storage events; per request, after authentication, build the attributes with
:func:`everynode.api.request_info.request_attributes`, resolve ``--as`` with
:func:`everynode.api.impersonation.impersonate`, and call :func:`authorize`; when it is not
allowed, answer :func:`forbidden_error` with its reason.  The review kinds are answered by
:mod:`everynode.api.authorization_reviews`, RBAC writes are checked by
:mod:`everynode.api.rbac_escalation`, and the default policy is :mod:`everynode.api.rbac_bootstrap`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from everynode.api import errors
from everynode.api.errors import ApiError
from everynode.api.names import is_dns1123_label, is_dns1123_subdomain

Obj = Mapping[str, Any]

GROUP_NAME = "rbac.authorization.k8s.io"
VERB_ALL = "*"
API_GROUP_ALL = "*"
RESOURCE_ALL = "*"
NON_RESOURCE_ALL = "*"

USER_KIND = "User"
GROUP_KIND = "Group"
SERVICE_ACCOUNT_KIND = "ServiceAccount"

# staging/src/k8s.io/apiserver/pkg/authentication/user/user.go
SYSTEM_PRIVILEGED_GROUP = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"

# staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNT_GROUP_PREFIX = "system:serviceaccounts:"
ALL_SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"

__all__ = [
    "UserInfo", "Attributes", "Decision", "Authorization", "Rule", "BindingVisit", "RuleSource",
    "RBACIndex", "compile_rule", "rule_allows", "rules_allow", "applies_to", "visit_bindings_for",
    "authorize", "authorize_rbac", "rules_for", "service_account_username",
    "split_service_account_username", "service_account_groups", "service_account_user",
    "with_authenticated_group", "forbidden_message", "forbidden_error", "default_binding",
    "aggregate_messages", "ResolvedRules", "compile_rules", "role_reference_rules",
]


# --- who asks, and what for -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class UserInfo:
    """``user.Info``: the authenticated (or impersonated) user of a request."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Attributes:
    """``authorizer.AttributesRecord``: one request as the authorizer sees it.

    A resource request names a verb, API group, resource (plural), optional subresource,
    object name and namespace (empty for cluster-scoped resources and for lists across all
    namespaces); a non-resource request names a verb (the lower-case HTTP method) and a path.
    Build them with :meth:`for_resource` / :meth:`for_path`.
    """

    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = "*"
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @classmethod
    def for_resource(cls, user: UserInfo, verb: str, resource: str, *, api_group: str = "",
                     api_version: str = "*", subresource: str = "", name: str = "",
                     namespace: str = "") -> Attributes:
        return cls(user=user, verb=verb, resource_request=True, namespace=namespace,
                   api_group=api_group, api_version=api_version, resource=resource,
                   subresource=subresource, name=name)

    @classmethod
    def for_path(cls, user: UserInfo, verb: str, path: str) -> Attributes:
        return cls(user=user, verb=verb, resource_request=False, path=path)


class Decision(enum.Enum):
    """``authorizer.Decision``."""

    DENY = 0
    ALLOW = 1
    NO_OPINION = 2


@dataclass(frozen=True, slots=True)
class Authorization:
    """An authorizer's answer: the decision, the reason text and any evaluation error."""

    decision: Decision
    reason: str = ""
    evaluation_error: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW

    @property
    def denied(self) -> bool:
        return self.decision is Decision.DENY


# --- rules ------------------------------------------------------------------------------------

def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str))


@dataclass(frozen=True, slots=True)
class Rule:
    """A ``PolicyRule`` compiled for matching; ``source`` is the rule as stored (a dict)."""

    source: Obj
    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]
    non_resource_urls: frozenset[str]
    url_prefixes: tuple[str, ...]


def compile_rule(rule: Obj) -> Rule:
    urls = _strings(rule.get("nonResourceURLs"))
    return Rule(
        source=rule,
        verbs=frozenset(_strings(rule.get("verbs"))),
        api_groups=frozenset(_strings(rule.get("apiGroups"))),
        resources=frozenset(_strings(rule.get("resources"))),
        resource_names=frozenset(_strings(rule.get("resourceNames"))),
        non_resource_urls=frozenset(urls),
        # NonResourceURLMatches: "a*" matches every path that starts with "a" (all trailing
        # stars trimmed, as strings.TrimRight does).
        url_prefixes=tuple(u.rstrip("*") for u in urls if u.endswith("*")),
    )


def compile_rules(rules: Any) -> tuple[Rule, ...]:
    """The ``rules`` list of a Role or ClusterRole, compiled (non-object entries skipped)."""
    if not isinstance(rules, list):
        return ()
    return tuple(compile_rule(r) for r in rules if isinstance(r, Mapping))


def _verb_matches(rule: Rule, verb: str) -> bool:
    return VERB_ALL in rule.verbs or verb in rule.verbs


def _resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    """``ResourceMatches``: ``*``, the exact ``resource[/subresource]``, or ``*/subresource``."""
    resources = rule.resources
    if RESOURCE_ALL in resources or combined in resources:
        return True
    return bool(subresource) and f"*/{subresource}" in resources


def _url_matches(rule: Rule, path: str) -> bool:
    if NON_RESOURCE_ALL in rule.non_resource_urls or path in rule.non_resource_urls:
        return True
    return any(path.startswith(prefix) for prefix in rule.url_prefixes)


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    """``RuleAllows``: does this one rule allow the request?"""
    if not _verb_matches(rule, attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    if API_GROUP_ALL not in rule.api_groups and attrs.api_group not in rule.api_groups:
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not _resource_matches(rule, combined, attrs.subresource):
        return False
    return not rule.resource_names or attrs.name in rule.resource_names


def rules_allow(attrs: Attributes, rules: Iterable[Rule]) -> bool:
    """``RulesAllow``."""
    return any(rule_allows(attrs, r) for r in rules)


# --- subjects ---------------------------------------------------------------------------------

def service_account_username(namespace: str, name: str) -> str:
    """``MakeUsername``: ``system:serviceaccount:NAMESPACE:NAME``."""
    return f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}"


def split_service_account_username(username: str) -> tuple[str, str] | None:
    """``SplitUsername``: (namespace, name) of a service account's user name, or None when it
    is not one (wrong prefix, not exactly two parts, an invalid namespace or name)."""
    if not username.startswith(SERVICE_ACCOUNT_USERNAME_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_USERNAME_PREFIX):].split(":")
    if len(parts) != 2 or is_dns1123_label(parts[0]) or is_dns1123_subdomain(parts[1]):
        return None
    return parts[0], parts[1]


def service_account_groups(namespace: str) -> tuple[str, str]:
    """``MakeGroupNames``: every service account is in these two groups."""
    return ALL_SERVICE_ACCOUNTS_GROUP, SERVICE_ACCOUNT_GROUP_PREFIX + namespace


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """``AuthenticatedGroupAdder``: every authenticated user is in ``system:authenticated``,
    unless it already is or is in ``system:unauthenticated``."""
    if ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.groups + (ALL_AUTHENTICATED,), user.uid, user.extra)


def service_account_user(namespace: str, name: str, *, uid: str = "") -> UserInfo:
    """The user a service-account token authenticates as (groups as the token authenticator
    and the authenticated-group adder give it)."""
    return with_authenticated_group(UserInfo(service_account_username(namespace, name),
                                             service_account_groups(namespace), uid))


def _subject_applies(user: UserInfo, subject: Obj, namespace: str) -> bool:
    """``appliesToUser``; ``namespace`` is the binding's (empty for a ClusterRoleBinding)."""
    kind = subject.get("kind")
    name = subject.get("name")
    if not isinstance(name, str):
        name = ""
    if kind == USER_KIND:
        return user.name == name
    if kind == GROUP_KIND:
        return name in user.groups
    if kind == SERVICE_ACCOUNT_KIND:
        # A RoleBinding may name a service account of its own namespace without a namespace.
        sa_namespace = subject.get("namespace") or namespace
        if not isinstance(sa_namespace, str) or not sa_namespace:
            return False
        return user.name == service_account_username(sa_namespace, name)
    return False


def _subjects(binding: Obj) -> list[Obj]:
    subjects = binding.get("subjects")
    if not isinstance(subjects, list):
        return []
    return [s if isinstance(s, dict) or isinstance(s, Mapping) else {} for s in subjects]


def applies_to(user: UserInfo, binding: Obj, namespace: str) -> Obj | None:
    """``appliesTo``: the first subject of the binding that names the user, or None."""
    for subject in _subjects(binding):
        if _subject_applies(user, subject, namespace):
            return subject
    return None


# --- where the rules come from ----------------------------------------------------------------

def _meta(obj: Obj) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) or isinstance(md, Mapping) else {}


def _name(obj: Obj) -> str:
    name = _meta(obj).get("name")
    return name if isinstance(name, str) else ""


def _namespace(obj: Obj) -> str:
    ns = _meta(obj).get("namespace")
    return ns if isinstance(ns, str) else ""


def _role_ref(binding: Obj) -> Mapping[str, Any]:
    ref = binding.get("roleRef")
    return ref if isinstance(ref, dict) or isinstance(ref, Mapping) else {}


class RuleSource(Protocol):
    """What the decision reads.  ``*_bindings_for`` may return a superset of the bindings that
    name the user (the walk checks every subject again); they must return them in a stable
    order, which becomes the order rules are visited in."""

    def cluster_role_bindings_for(self, user: UserInfo) -> Iterable[Obj]: ...

    def role_bindings_for(self, user: UserInfo, namespace: str) -> Iterable[Obj]: ...

    def role_rules(self, namespace: str, name: str) -> Sequence[Rule] | None:
        """The compiled rules of Role ``namespace/name``; None when there is no such Role."""
        ...

    def cluster_role_rules(self, name: str) -> Sequence[Rule] | None: ...


def _subject_keys(subject: Obj, binding_namespace: str) -> Iterator[tuple[str, str]]:
    """The index keys a subject is found under: a user name, a group name, or (service
    accounts) the user name they authenticate as."""
    kind = subject.get("kind")
    name = subject.get("name")
    if not isinstance(name, str):
        return
    if kind == USER_KIND:
        yield "u", name
    elif kind == GROUP_KIND:
        yield "g", name
    elif kind == SERVICE_ACCOUNT_KIND:
        sa_namespace = subject.get("namespace") or binding_namespace
        if isinstance(sa_namespace, str) and sa_namespace:
            yield "u", service_account_username(sa_namespace, name)


def _user_keys(user: UserInfo) -> Iterator[tuple[str, str]]:
    yield "u", user.name
    for group in user.groups:
        yield "g", group


class _BindingIndex:
    """Bindings of one scope (cluster-wide, or one namespace) by name and by subject key."""

    __slots__ = ("by_name", "by_subject")

    def __init__(self) -> None:
        self.by_name: dict[str, Obj] = {}
        self.by_subject: dict[tuple[str, str], set[str]] = {}

    def upsert(self, binding: Obj, namespace: str) -> None:
        name = _name(binding)
        self.remove(name, namespace)
        self.by_name[name] = binding
        for subject in _subjects(binding):
            for k in _subject_keys(subject, namespace):
                self.by_subject.setdefault(k, set()).add(name)

    def remove(self, name: str, namespace: str) -> None:
        old = self.by_name.pop(name, None)
        if old is None:
            return
        for subject in _subjects(old):
            for k in _subject_keys(subject, namespace):
                names = self.by_subject.get(k)
                if names is not None:
                    names.discard(name)
                    if not names:
                        del self.by_subject[k]

    def for_user(self, user: UserInfo) -> list[Obj]:
        names: set[str] = set()
        for k in _user_keys(user):
            found = self.by_subject.get(k)
            if found:
                names |= found
        return [self.by_name[n] for n in sorted(names)]


class RBACIndex:
    """A :class:`RuleSource` over RBAC objects held in memory, indexed by subject.

    Feed it the objects (``from_objects``) or keep it current from watch events: ``upsert`` an
    added or modified object, ``delete`` a removed one (``kind`` is the object's kind).  Roles
    are compiled on the way in, so a request only matches.
    """

    def __init__(self) -> None:
        self._roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        self._cluster_roles: dict[str, tuple[Rule, ...]] = {}
        self._cluster_bindings = _BindingIndex()
        self._bindings: dict[str, _BindingIndex] = {}

    @classmethod
    def from_objects(cls, *, roles: Iterable[Obj] = (), cluster_roles: Iterable[Obj] = (),
                     role_bindings: Iterable[Obj] = (),
                     cluster_role_bindings: Iterable[Obj] = ()) -> RBACIndex:
        index = cls()
        for kind, objs in (("Role", roles), ("ClusterRole", cluster_roles),
                           ("RoleBinding", role_bindings),
                           ("ClusterRoleBinding", cluster_role_bindings)):
            for obj in objs:
                index.upsert(kind, obj)
        return index

    def upsert(self, kind: str, obj: Obj) -> None:
        name, namespace = _name(obj), _namespace(obj)
        if kind == "Role":
            self._roles[(namespace, name)] = compile_rules(obj.get("rules"))
        elif kind == "ClusterRole":
            self._cluster_roles[name] = compile_rules(obj.get("rules"))
        elif kind == "RoleBinding":
            self._bindings.setdefault(namespace, _BindingIndex()).upsert(obj, namespace)
        elif kind == "ClusterRoleBinding":
            self._cluster_bindings.upsert(obj, "")
        else:
            raise ValueError(f"not an RBAC kind: {kind!r}")

    def delete(self, kind: str, obj: Obj) -> None:
        name, namespace = _name(obj), _namespace(obj)
        if kind == "Role":
            self._roles.pop((namespace, name), None)
        elif kind == "ClusterRole":
            self._cluster_roles.pop(name, None)
        elif kind == "RoleBinding":
            scope = self._bindings.get(namespace)
            if scope is not None:
                scope.remove(name, namespace)
                if not scope.by_name:
                    del self._bindings[namespace]
        elif kind == "ClusterRoleBinding":
            self._cluster_bindings.remove(name, "")
        else:
            raise ValueError(f"not an RBAC kind: {kind!r}")

    # RuleSource
    def cluster_role_bindings_for(self, user: UserInfo) -> list[Obj]:
        return self._cluster_bindings.for_user(user)

    def role_bindings_for(self, user: UserInfo, namespace: str) -> list[Obj]:
        scope = self._bindings.get(namespace)
        return scope.for_user(user) if scope is not None else []

    def role_rules(self, namespace: str, name: str) -> tuple[Rule, ...] | None:
        return self._roles.get((namespace, name))

    def cluster_role_rules(self, name: str) -> tuple[Rule, ...] | None:
        return self._cluster_roles.get(name)


# --- the walk ---------------------------------------------------------------------------------

def _describe_subject(subject: Obj, binding_namespace: str) -> str:
    """``describeSubject``: ``User "alice"``, ``ServiceAccount "name/namespace"``."""
    kind = subject.get("kind") or ""
    name = subject.get("name") or ""
    if kind == SERVICE_ACCOUNT_KIND:
        namespace = subject.get("namespace") or binding_namespace
        return f'{kind} "{name}/{namespace}"'
    return f'{kind} "{name}"'


class BindingVisit:
    """One step of the walk: a binding that names the user, the subject of it that does, and
    the rules of its role — or, for a binding whose role cannot be resolved, the error
    (``rules`` empty).  A plain slotted class: one is made per applying binding per request."""

    __slots__ = ("binding", "subject", "cluster_scoped", "rules", "error")

    def __init__(self, binding: Obj, subject: Obj, cluster_scoped: bool, rules: Sequence[Rule],
                 error: str = ""):
        self.binding = binding
        self.subject = subject
        self.cluster_scoped = cluster_scoped
        self.rules = rules
        self.error = error

    def describe(self) -> str:
        """The source as upstream's describers print it (``ClusterRoleBinding "x" of
        ClusterRole "y" to Group "z"``, ``RoleBinding "x/ns" of Role "y" to User "z"``)."""
        ref = _role_ref(self.binding)
        if self.cluster_scoped:
            return (f'ClusterRoleBinding "{_name(self.binding)}" of {ref.get("kind") or ""} '
                    f'"{ref.get("name") or ""}" to {_describe_subject(self.subject, "")}')
        namespace = _namespace(self.binding)
        return (f'RoleBinding "{_name(self.binding)}/{namespace}" of {ref.get("kind") or ""} '
                f'"{ref.get("name") or ""}" to {_describe_subject(self.subject, namespace)}')


_NO_RULES: tuple[Rule, ...] = ()


def role_reference_rules(source: RuleSource, ref: Mapping[str, Any],
                          binding_namespace: str) -> tuple[Sequence[Rule], str]:
    """``GetRoleReferenceRules``: the rules, or no rules and the error text the informer
    listers give."""
    kind = ref.get("kind")
    raw_name = ref.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    if kind == "Role":
        rules = source.role_rules(binding_namespace, name)
        return (rules, "") if rules is not None else (_NO_RULES, f'role.{GROUP_NAME} "{name}" not found')
    if kind == "ClusterRole":
        rules = source.cluster_role_rules(name)
        return (rules, "") if rules is not None else (_NO_RULES, f'clusterrole.{GROUP_NAME} "{name}" not found')
    return _NO_RULES, f'unsupported role reference kind: "{kind if isinstance(kind, str) else ""}"'


def visit_bindings_for(source: RuleSource, user: UserInfo, namespace: str) -> Iterator[BindingVisit]:
    """``VisitRulesFor``, a binding at a time: every binding that applies to ``user`` in
    ``namespace`` (cluster-wide bindings first, then the namespace's RoleBindings when
    ``namespace`` is not empty), with its role's rules in order."""
    for binding in source.cluster_role_bindings_for(user):
        subject = applies_to(user, binding, "")
        if subject is not None:
            rules, error = role_reference_rules(source, _role_ref(binding), "")
            yield BindingVisit(binding, subject, True, rules, error)
    if not namespace:
        return
    for binding in source.role_bindings_for(user, namespace):
        subject = applies_to(user, binding, namespace)
        if subject is not None:
            rules, error = role_reference_rules(source, _role_ref(binding), namespace)
            yield BindingVisit(binding, subject, False, rules, error)


def aggregate_messages(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b]`` (duplicates once)."""
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def authorize_rbac(attrs: Attributes, source: RuleSource) -> Authorization:
    """``RBACAuthorizer.Authorize``: allowed by the first rule that allows the request, else no
    opinion — with the resolution errors met on the way as the reason."""
    errors: list[str] = []
    for visit in visit_bindings_for(source, attrs.user, attrs.namespace):
        for rule in visit.rules:
            if rule_allows(attrs, rule):
                return Authorization(Decision.ALLOW, f"RBAC: allowed by {visit.describe()}")
        if visit.error:
            errors.append(visit.error)
    reason = f"RBAC: {aggregate_messages(errors)}" if errors else ""
    return Authorization(Decision.NO_OPINION, reason)


def authorize(attrs: Attributes, source: RuleSource, *,
              privileged_groups: Sequence[str] = (SYSTEM_PRIVILEGED_GROUP,)) -> Authorization:
    """kube-apiserver's chain with ``--authorization-mode=RBAC``: members of a privileged group
    (``system:masters``) are allowed with no reason, everything else is RBAC's decision."""
    if any(g in attrs.user.groups for g in privileged_groups):
        return Authorization(Decision.ALLOW)
    return authorize_rbac(attrs, source)


@dataclass(frozen=True, slots=True)
class ResolvedRules:
    """``RulesFor``: the rules that apply to a user in a namespace, and resolution errors."""

    rules: tuple[Obj, ...]
    errors: tuple[str, ...]

    @property
    def evaluation_error(self) -> str:
        return aggregate_messages(self.errors) if self.errors else ""


def rules_for(source: RuleSource, user: UserInfo, namespace: str) -> ResolvedRules:
    """``DefaultRuleResolver.RulesFor``: visit every rule (no short cut), as stored."""
    rules: list[Obj] = []
    errors: list[str] = []
    for visit in visit_bindings_for(source, user, namespace):
        rules.extend(rule.source for rule in visit.rules)
        if visit.error:
            errors.append(visit.error)
    return ResolvedRules(tuple(rules), tuple(errors))


# --- what a refusal says ----------------------------------------------------------------------

def forbidden_message(attrs: Attributes) -> str:
    """``forbiddenMessage`` (apiserver responsewriters): the sentence kubectl prints after
    ``Error from server (Forbidden):``; the caller appends ``": " + reason`` when there is one."""
    username = attrs.user.name
    if not attrs.resource_request:
        return f'User "{username}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        return (f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group '
                f'"{attrs.api_group}" in the namespace "{attrs.namespace}"')
    return (f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group '
            f'"{attrs.api_group}" at the cluster scope')


def forbidden_error(attrs: Attributes, reason: str) -> ApiError:
    """The 403 of ``responsewriters.Forbidden``: ``NewForbidden(group/resource, name,
    message[: reason])`` — ``pods "x" is forbidden: User ...``, or ``forbidden: User ...`` for a
    non-resource path."""
    text = forbidden_message(attrs)
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource_request:
        return ApiError(errors.status(403, "Forbidden", f"forbidden: {text}", {}))
    return errors.forbidden(attrs.resource, attrs.api_group, attrs.name, text)


# --- defaulting -------------------------------------------------------------------------------

def default_binding(binding: dict[str, Any]) -> None:
    """``SetDefaults_RoleBinding`` / ``_ClusterRoleBinding`` / ``_Subject`` (rbac/v1): an empty
    ``roleRef.apiGroup`` becomes ``rbac.authorization.k8s.io``, and so does the ``apiGroup`` of
    a User or Group subject (a ServiceAccount's stays empty)."""
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP_NAME
    subjects = binding.get("subjects")
    if isinstance(subjects, list):
        for subject in subjects:
            if (isinstance(subject, dict) and not subject.get("apiGroup")
                    and subject.get("kind") in (USER_KIND, GROUP_KIND)):
                subject["apiGroup"] = GROUP_NAME
