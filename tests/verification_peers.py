"""Loopback stand-ins for the outside world that domain verification talks to.

`DnsServer` answers TXT questions over UDP from a dict of records (NXDOMAIN for anything else);
`WellKnownServer` serves `/.well-known/aisle-verification.txt` per `Host` header. Both run in a
daemon thread on a free 127.0.0.1 port and record what they were asked, so tests can show the app
really went through them.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

WELL_KNOWN_PATH = "/.well-known/aisle-verification.txt"


def _key(name: str) -> str:
    return name.lower().rstrip(".")


class DnsServer:
    """`records` maps a domain name to the TXT strings published on it."""

    def __init__(self) -> None:
        self.records: dict[str, list[str]] = {}
        self.queries: list[tuple[str, str]] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def publish(self, name: str, *texts: str) -> None:
        self.records[_key(name)] = list(texts)

    def _answer(self, wire: bytes) -> bytes:
        query = dns.message.from_wire(wire)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = _key(question.name.to_text())
        self.queries.append((name, dns.rdatatype.to_text(question.rdtype)))
        texts = self.records.get(name)
        if texts is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.TXT and texts:
            quoted = ['"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in texts]
            response.answer.append(
                dns.rrset.from_text_list(question.name, 60, dns.rdataclass.IN, "TXT", quoted)
            )
        return response.to_wire()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                wire, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                self._sock.sendto(self._answer(wire), peer)
            except Exception:  # a malformed packet must not kill the server
                continue

    def __enter__(self) -> DnsServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


class WellKnownServer:
    """`files` maps a `Host` header (the site's domain) to the body served at the well-known path."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                host = _key(self.headers.get("Host", "").rsplit(":", 1)[0])
                peer.requests.append((host, self.path))
                body = peer.files.get(host) if self.path == WELL_KNOWN_PATH else None
                payload = (body if body is not None else "not found").encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve(self, domain: str, body: str) -> None:
        self.files[_key(domain)] = body

    def __enter__(self) -> WellKnownServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
