"""Which ``Host`` (and, for a state-changing request, ``Origin``) the plugin answers.

A web page on another site can make the user's browser talk to this server under the
page's own name (DNS rebinding: ``evil.example`` re-resolved to 127.0.0.1): the browser
then sends ``Host: evil.example``, and the page may read our answers, being same-origin
with them. So a request is answered only when its ``Host`` is a name the server was
started for:

- ``localhost`` (and ``*.localhost``, which browsers resolve to the loopback themselves);
- an IP address literal (``127.0.0.1``, ``[::1]``, ``192.0.2.7``): such a name never
  resolves to anything else, so it cannot be rebound;
- TensorBoard's ``--host`` name;
- with ``--bind_all`` (or ``--host 0.0.0.0``/``::``): this machine's names
  (``socket.gethostname()``, ``socket.getfqdn()``);
- the names of ``--roofline_allowed_hosts`` (a proxy's public name; ``*`` accepts any).

``POST calibrate`` also needs its ``Origin`` (sent by browsers on every POST) to name an
allowed host. A request without ``Host`` (not from a browser) is answered.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")
ANY_HOST = "*"


def host_name(value: str) -> str:
    """The name of a ``Host`` header value or a URL's netloc, without port, brackets or a
    trailing dot, in lower case: ``[::1]:6006`` -> ``::1``, ``Box.:80`` -> ``box``."""
    value = value.strip().lower()
    if value.startswith("["):  # an IPv6 literal, maybe with a port
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts_flag(value: str | None) -> list[str]:
    """``--roofline_allowed_hosts a.example,b.example`` -> their names."""
    return [host_name(n) for n in (value or "").split(",") if n.strip()]


class HostCheck:
    """Says whether a request's ``Host`` / ``Origin`` is one this server answers."""

    def __init__(
        self, host: str | None = None, bind_all: bool = False, allowed: list[str] | None = None
    ):
        self.names = set(LOOPBACK_NAMES) | set(allowed or [])
        if host:
            self.names.add(host_name(host))
        self.any_interface = bool(bind_all) or (host is not None and host in WILDCARD_ADDRESSES)
        self.any_host = ANY_HOST in self.names
        self._machine_names: set[str] | None = None

    def _machine(self) -> set[str]:
        """This machine's names, looked up once (getfqdn may ask DNS), with --bind_all."""
        if self._machine_names is None:
            names = set()
            for lookup in (socket.gethostname, socket.getfqdn):
                try:
                    names.add(host_name(lookup()))
                except OSError:
                    pass
            self._machine_names = names - {""}
        return self._machine_names

    def allows(self, name: str) -> bool:
        """Whether a host name (as ``host_name`` gives it) is one this server answers."""
        if self.any_host or name in self.names or name.endswith(".localhost"):
            return True
        if _is_ip_literal(name):
            return True
        return self.any_interface and name in self._machine()

    def refusal(self, headers, state_changing: bool = False) -> str | None:
        """Why a request with these headers is refused (one line), or None to answer it."""
        host = headers.get("Host")
        if host is not None and not self.allows(host_name(host)):
            return (
                f"Host {host!r} is not a name this server was started for; a proxy's name is "
                "allowed with TensorBoard's --roofline_allowed_hosts NAME[,NAME]"
            )
        origin = headers.get("Origin")
        if state_changing and origin is not None:
            netloc = urllib.parse.urlsplit(origin).netloc
            if not netloc or not self.allows(host_name(netloc)):
                return f"Origin {origin!r} is another site's: this request is refused"
        return None
