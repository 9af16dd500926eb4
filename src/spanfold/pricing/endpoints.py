"""Which API a call went to, for pricing: the provider the table knows by its API URL, whatever SDK made the call.

The openai SDK reaches Groq, Together, DeepSeek, OpenRouter, Azure OpenAI and many more through ``base_url``; its spans
name the provider ``openai`` and the host in ``server.address``. A call is priced as the provider its host belongs to
(genai-prices matches providers by their API URL), never as the SDK's provider on a host that is not its own:

* a public host the table knows: that provider's prices (``api.groq.com`` -> groq);
* a public host it does not know (a gateway, a provider the table lacks): no price from the table (the user's prices
  still apply, by the span's provider name); never the SDK's provider's prices;
* no host, or a host on this machine or the local network (``localhost``, a private address, a one-label name such as
  a container's, ``*.local``, ``*.internal``): the span's provider, as it says (a local proxy in front of it, a test
  double);
* a gateway that routes each call to the provider its span names (:data:`GATEWAYS`: Portkey): that provider.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Final

#: Host name suffixes of a local network (mDNS, Docker's host.docker.internal, ``*.localhost``).
LOCAL_SUFFIXES: Final = (".local", ".localhost", ".internal", ".lan", ".home.arpa")


#: Gateways whose calls' spans name the provider they were routed to (spanfold's Portkey instrumentation does).
GATEWAYS: Final = frozenset({"api.portkey.ai"})


def is_local(host: str) -> bool:
    """Whether ``host`` is this machine or the local network (its API is not a provider's public one)."""
    name = host.strip("[]").rstrip(".").lower()
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name == "localhost" or "." not in name or name.endswith(LOCAL_SUFFIXES)
    return address.is_private or address.is_loopback or address.is_link_local or address.is_unspecified


@functools.lru_cache(maxsize=1024)  # every priced step asks; a process talks to a few hosts
def api_url(host: str | None, port: int | None) -> str | None:
    """The API URL of a call to ``host`` on ``port`` (what genai-prices matches providers by); None when the host is
    unknown, local (:func:`is_local`) or a gateway (:data:`GATEWAYS`): the span's provider decides."""
    if not host or is_local(host) or host.rstrip(".").lower() in GATEWAYS:
        return None
    address = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"https://{address}" if port in (None, 443) else f"https://{address}:{port}"
