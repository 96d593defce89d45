"""Domain ownership checks: a DNS TXT record or a file under `/.well-known/` on the site's domain."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import dns.exception
import dns.resolver
import httpx

from aisle.settings import Settings

TXT_PREFIX = "aisle-verification="
WELL_KNOWN_PATH = "/.well-known/aisle-verification.txt"
MAX_FILE_BYTES = 4096


def dns_record_name(domain: str) -> str:
    return f"_aisle-verification.{domain}"


def expected_value(token: str) -> str:
    return f"{TXT_PREFIX}{token}"


def _resolver(settings: Settings) -> dns.resolver.Resolver:
    if not settings.verification_dns_server:
        resolver = dns.resolver.Resolver()
    else:
        resolver = dns.resolver.Resolver(configure=False)
        host, _, port = settings.verification_dns_server.partition(":")
        resolver.nameservers = [host]
        resolver.port = int(port or 53)
    resolver.lifetime = settings.verification_timeout_seconds
    return resolver


def check_dns(settings: Settings, *, domain: str, token: str) -> dict[str, Any]:
    wanted = expected_value(token)
    resolver = _resolver(settings)
    # Say why each name failed: a record with a stale token on the first name matters more than
    # the domain itself having no TXT records at all.
    misses = []
    for name in (dns_record_name(domain), domain):
        try:
            answer = resolver.resolve(name, "TXT")
        except (dns.exception.DNSException, OSError) as exc:
            misses.append(f"{name}: {type(exc).__name__}")
            continue
        for record in answer:
            text = b"".join(record.strings).decode(errors="replace").strip()
            if text == wanted:
                return {"method": "dns", "ok": True, "detail": f"TXT record found on {name}"}
        misses.append(f"{name}: no TXT record '{wanted}'")
    return {"method": "dns", "ok": False, "detail": "; ".join(misses)}


def _is_public_host(domain: str) -> bool:
    try:
        infos = socket.getaddrinfo(domain, 443, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    addresses = {ipaddress.ip_address(info[4][0]) for info in infos}
    return bool(addresses) and all(a.is_global for a in addresses)


def check_http(settings: Settings, *, domain: str, token: str) -> dict[str, Any]:
    if settings.verification_http_base:
        url = settings.verification_http_base.rstrip("/") + WELL_KNOWN_PATH
    else:
        # Never let verification be used to reach internal services.
        if not _is_public_host(domain):
            return {"method": "http", "ok": False, "detail": f"{domain} does not resolve to a public address"}
        url = f"https://{domain}{WELL_KNOWN_PATH}"
    try:
        with (
            httpx.Client(timeout=settings.verification_timeout_seconds, follow_redirects=False) as client,
            client.stream("GET", url, headers={"Host": domain}) as response,
        ):
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_FILE_BYTES:
                    break
            status = response.status_code
    except httpx.HTTPError as exc:
        return {"method": "http", "ok": False, "detail": f"{url}: {type(exc).__name__}"}
    if status != 200:
        return {"method": "http", "ok": False, "detail": f"{url} answered {status}"}
    text = body[:MAX_FILE_BYTES].decode(errors="replace").strip()
    if text in (token, expected_value(token)):
        return {"method": "http", "ok": True, "detail": f"{url} holds the token"}
    return {"method": "http", "ok": False, "detail": f"{url} does not hold the token"}


def verify(settings: Settings, *, domain: str, token: str) -> list[dict[str, Any]]:
    """Checks in order, stopping at the first that proves ownership."""
    checks = [check_dns(settings, domain=domain, token=token)]
    if not checks[0]["ok"]:
        checks.append(check_http(settings, domain=domain, token=token))
    return checks
