"""Roles and the permissions they grant."""

from __future__ import annotations

ANALYTICS_VIEW = "analytics:view"
ANALYTICS_SQL = "analytics:sql"  # write and run ad-hoc SQL over a site's views
AI_GENERATE = "ai:generate"
SITES_READ = "sites:read"
SITES_WRITE = "sites:write"
ORG_MANAGE = "org:manage"

ALL_PERMISSIONS = frozenset({ANALYTICS_VIEW, ANALYTICS_SQL, AI_GENERATE, SITES_READ, SITES_WRITE, ORG_MANAGE})

ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    "owner": ALL_PERMISSIONS,
    "admin": ALL_PERMISSIONS,
    "editor": frozenset({SITES_READ, SITES_WRITE, ANALYTICS_VIEW, AI_GENERATE}),
    "analyst": frozenset({SITES_READ, ANALYTICS_VIEW}),
    "viewer": frozenset({SITES_READ}),
}

ROLES = tuple(ROLE_PERMISSIONS)


def permissions_for(role: str) -> frozenset[str]:
    return ROLE_PERMISSIONS.get(role, frozenset())
