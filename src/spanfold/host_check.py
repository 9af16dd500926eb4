"""Does a request name this server? The DNS-rebinding checks of ``spanfold ui`` and ``spanfold serve``.

A web page the user visits can point its own name (``rebind.attacker.example``) at 127.0.0.1 once it has loaded: the
browser then sends the page's requests to the loopback server and lets the page read the answers, since the
same-origin policy compares names, not addresses. Such a request still carries the page's name in ``Host``, so a
server that answers only to its own names gives the page nothing: the loopback names (127.0.0.1, localhost, ::1),
the address it was told to bind (``--host``) and names the user adds (``--allow-host``, ``SPANFOLD_ALLOWED_HOSTS``).

What is decided here, and why:

* A name is compared case-insensitively, without one trailing dot (``LocalHost.`` is ``localhost``); an IP address
  by its value (``[0:0::1]`` is ``[::1]``). A malformed ``Host`` (not a name or a bracketed IPv6 address, a port that
  is not 1-65535, anything not ASCII) is refused, and so are two ``Host`` headers.
* The port is not compared: the page chooses it with its URL (``http://rebind.attacker.example:8777/``), so
  comparing it would stop no rebinding, while an ``ssh -L`` tunnel or a container's port mapping rightly changes it.
* A request without ``Host`` is allowed, by both servers: browsers always send one, and a client that can leave it
  out (an HTTP/1.0 client; aiohttp answers 400 to HTTP/1.1 without one) can as well write ``Host: 127.0.0.1``, so
  refusing it would protect nothing.
* A wildcard address (0.0.0.0, ::) names no server: binding one adds no name, only the loopback ones and the user's
  (an address or name the server is reached by on the network must be added).
* :func:`cross_origin`: a browser marks a request a page made (``Origin``, ``Sec-Fetch-Site``); OTLP exporters, the
  Collector and curl send neither. The receiver has no page of its own, so it refuses every such request but one
  from its own origin.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

#: The names every server answers to.
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
#: Where the user adds names (comma-separated), beside ``--allow-host``.
ENV: Final = "SPANFOLD_ALLOWED_HOSTS"
_LABEL: Final = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_PORT: Final = re.compile(r"[0-9]{1,5}")


def _canonical(name: str) -> str | None:
    """A DNS name or an IPv4 address as compared (lower case, no trailing dot); None when it is neither."""
    name = name.lower()
    if name.endswith("."):  # the fully qualified form of the same name
        name = name[:-1]
    try:
        return ipaddress.IPv4Address(name).compressed
    except ValueError:
        pass
    return name if len(name) <= 253 and _NAME.fullmatch(name) else None


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` as a ``Host`` header (or an origin) writes it: the name as compared (an IPv6 address without
    its brackets) and the port (None: not written); None when malformed."""
    if not value.isascii():
        return None
    name: str | None
    if value.startswith("["):
        literal, bracket, rest = value[1:].partition("]")
        try:
            name = ipaddress.IPv6Address(literal).compressed if bracket else None
        except ValueError:
            name = None
    else:
        literal, colon, port = value.partition(":")
        name, rest = _canonical(literal), colon + port
    if name is None:
        return None
    if not rest:
        return name, None
    port_text = rest[1:]
    if rest[0] != ":" or not _PORT.fullmatch(port_text) or not 0 < int(port_text) < 65536:
        return None
    return name, int(port_text)


def name_of(value: str) -> str:
    """A name given to the server (``--host``, ``--allow-host``) as compared: a name, an IPv4 address, an IPv6 address
    with or without brackets; a port is allowed and ignored (ports are not compared). ValueError when malformed."""
    text = value.strip()
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        pass
    split = split_host(text)
    if split is None:
        raise ValueError(f"{value!r} is not a host name")
    return split[0]


def parse_names(values: Iterable[str]) -> tuple[str, ...]:
    """The names in ``values``, each a comma-separated list (``--allow-host``, ``SPANFOLD_ALLOWED_HOSTS``), as
    compared; ValueError naming the first malformed one."""
    return tuple(name_of(part) for value in values for part in value.split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """The names a server answers to."""

    names: frozenset[str]

    @classmethod
    def of(cls, bound: str, extra: Iterable[str] = ()) -> AllowedHosts:
        """Loopback, the address the server binds (unless a wildcard, or not a name: binding it fails on its own)
        and ``extra`` (ValueError when one is malformed)."""
        names = set(LOOPBACK) | set(parse_names(extra))
        try:
            own = name_of(bound)
        except ValueError:
            own = None
        try:
            wildcard = own is None or ipaddress.ip_address(own).is_unspecified
        except ValueError:  # a name, not an address
            wildcard = False
        if own is not None and not wildcard:
            names.add(own)
        return cls(frozenset(names))

    def allows(self, host_headers: Sequence[str]) -> bool:
        """Do these ``Host`` headers (every one the request carried) name this server? None does; two do not."""
        if not host_headers:
            return True
        if len(host_headers) > 1:
            return False
        split = split_host(host_headers[0])
        return split is not None and split[0] in self.names


def cross_origin(origin: str | None, fetch_site: str | None, host: str | None) -> bool:
    """Did a browser send this request from a page of another origin? ``origin``, ``fetch_site``: the ``Origin`` and
    ``Sec-Fetch-Site`` headers (None: absent); ``host``: the ``Host`` header. Only ``http://`` and the very name and
    port of ``Host`` is the server's own origin (``null``, another port, another name, https: not)."""
    if fetch_site is not None and fetch_site.strip().lower() not in ("same-origin", "none"):
        return True  # cross-site, or same-site: another port of the same name is another origin
    if origin is None:
        return False
    scheme, sep, authority = origin.strip().partition("://")
    if not sep or scheme.lower() != "http" or host is None:
        return True
    mine, theirs = split_host(host), split_host(authority)
    if mine is None or theirs is None:
        return True
    return (mine[0], mine[1] or 80) != (theirs[0], theirs[1] or 80)
