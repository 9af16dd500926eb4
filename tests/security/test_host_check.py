"""``spanfold.host_check``: which ``Host`` headers name this server, and which requests a browser sent from another
origin (the DNS-rebinding checks of ``spanfold ui`` and ``spanfold serve``)."""

from __future__ import annotations

import pytest

from spanfold.host_check import AllowedHosts, cross_origin, name_of, parse_names, split_host


def test_split_host_reads_names_addresses_and_ports() -> None:
    assert split_host("localhost") == ("localhost", None)
    assert split_host("LocalHost.:8777") == ("localhost", 8777)  # case-insensitive, one trailing dot dropped
    assert split_host("127.0.0.1:80") == ("127.0.0.1", 80)
    assert split_host("[::1]") == ("::1", None)
    assert split_host("[0:0:0:0:0:0:0:1]:4318") == ("::1", 4318)  # one address, however written
    assert split_host("[::FFFF:7F00:1]") == ("::ffff:7f00:1", None)
    assert split_host("traces.example.internal:65535") == ("traces.example.internal", 65535)
    assert split_host("my_box-2.lan") == ("my_box-2.lan", None)


@pytest.mark.parametrize(
    "value",
    ["", " ", ".", ":8777", "::1", "[::1", "[::1]x", "[::1]:", "[127.0.0.1]", "[localhost]", "local host",
     "localhost:", "localhost:http", "localhost:0", "localhost:65536", "localhost:+80", "localhost:8777:1",
     "localhost..", "a..b", "-a.example", "evil.example/x", "user@localhost", "l\u00f6calhost",
     "\u212aocalhost", "localhost:\u0663", "a" * 64 + ".example", ("a." * 127) + "aa"],
)  # fmt: skip
def test_malformed_values_are_refused(value: str) -> None:
    assert split_host(value) is None
    assert not AllowedHosts.of("127.0.0.1", ["a.example"]).allows([value])


def test_loopback_the_bound_address_and_added_names() -> None:
    hosts = AllowedHosts.of("127.0.0.1")
    for host in ("127.0.0.1:8777", "localhost:8777", "[::1]:8777", "LOCALHOST", "localhost.", "localhost:1"):
        assert hosts.allows([host]), host
    for host in ("rebind.attacker.example", "rebind.attacker.example:8777", "127.0.0.2", "[::2]", "0.0.0.0",
                 "localhost.attacker.example", "127.0.0.1.nip.io"):  # fmt: skip
        assert not hosts.allows([host]), host
    assert AllowedHosts.of("192.168.1.5").allows(["192.168.1.5:8777"])
    assert AllowedHosts.of("fe80::1").allows(["[FE80::1]:8777"])
    assert AllowedHosts.of("box.lan").allows(["BOX.LAN.:4318"])
    added = AllowedHosts.of("127.0.0.1", ["Traces.Example.", "[::5]", "10.0.0.7"])
    assert added.allows(["traces.example"]) and added.allows(["[::5]:80"]) and added.allows(["10.0.0.7"])
    assert not added.allows(["other.example"])


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::", ""])
def test_a_wildcard_address_adds_no_name(wildcard: str) -> None:
    hosts = AllowedHosts.of(wildcard, ["box.lan"])
    assert hosts.allows(["localhost:8777"]) and hosts.allows(["box.lan"])
    assert not hosts.allows(["0.0.0.0"]) and not hosts.allows(["[::]"]) and not hosts.allows(["192.168.1.5"])


def test_a_missing_host_is_allowed_two_are_not() -> None:
    hosts = AllowedHosts.of("127.0.0.1")
    assert hosts.allows([])
    assert not hosts.allows(["localhost", "localhost"])


def test_names_the_user_adds() -> None:
    assert parse_names(["a.example, B.example.", " [::1] ", "10.0.0.7,,", "::2"]) == (
        "a.example", "b.example", "::1", "10.0.0.7", "::2")  # fmt: skip
    assert name_of("box.lan:8080") == "box.lan"  # a port is allowed and ignored: ports are not compared
    for bad in ("bad name", "bad/name", "*", "", "[::1"):
        with pytest.raises(ValueError, match="not a host name"):
            name_of(bad)
    with pytest.raises(ValueError, match="bad/name"):
        parse_names(["ok.example,bad/name"])


def test_cross_origin() -> None:
    assert not cross_origin(None, None, "127.0.0.1:4318")  # an OTLP exporter, the Collector, curl
    assert not cross_origin("http://127.0.0.1:4318", None, "127.0.0.1:4318")  # its own origin
    assert not cross_origin("HTTP://LocalHost.:4318", "same-origin", "localhost:4318")
    assert not cross_origin("http://localhost", None, "localhost:80")  # port 80 is http's own
    assert not cross_origin(None, "none", "localhost:4318")  # the user typed it
    assert cross_origin("http://evil.example", None, "127.0.0.1:4318")
    assert cross_origin("http://localhost:3000", None, "localhost:4318")  # another port is another origin
    assert cross_origin("http://127.0.0.1:4318", None, "localhost:4318")  # another name too
    assert cross_origin("https://127.0.0.1:4318", None, "127.0.0.1:4318")
    assert cross_origin("null", None, "127.0.0.1:4318")
    assert cross_origin("http://127.0.0.1:4318/path", None, "127.0.0.1:4318")
    assert cross_origin("http://127.0.0.1:4318", None, None)  # no Host: no origin of its own to match
    assert cross_origin(None, "cross-site", "127.0.0.1:4318")
    assert cross_origin(None, "Same-Site", "127.0.0.1:4318")
