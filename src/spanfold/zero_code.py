"""Zero-code: ``opentelemetry-instrument python app.py`` with spanfold installed, and ``spanfold run -- CMD``.

``opentelemetry-instrument`` configures the SDK through the installed *distro* and *configurator*. spanfold ships
both (entry points ``opentelemetry_distro`` / ``opentelemetry_configurator``, named ``spanfold``), so that in a venv
with spanfold the command works as typed:

* traces go to spanfold's exporter unless ``OTEL_TRACES_EXPORTER`` says otherwise (``spanfold,otlp`` for both);
* ``otlp`` means the OTLP exporter that is installed: HTTP/protobuf (the ``otlp`` extra) when the gRPC one is not
  and no protocol is set; neither installed, spanfold says in one line what to install and writes its files
  meanwhile (the SDK alone would fail and leave the app untraced);
* metrics and logs exporters are off unless ``OTEL_METRICS_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` are set (the OTel
  distro's default, ``otlp``, fails in a venv without the gRPC exporter and has nowhere to send to);
* other instrumentations of the client libraries spanfold traces (the OTel ``openai-v2``, OpenLLMetry,
  OpenInference...) are turned off, and said so in one line, unless ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` is set:
  two instrumentations of one call make two spans of one model step.

``spanfold run`` does the same without ``opentelemetry-instrument``: the command runs with a ``sitecustomize`` that
calls ``spanfold.init()`` (:mod:`spanfold.bootstrap`), and the same environment.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping
from typing import Any

from opentelemetry.instrumentation.distro import BaseDistro  # type: ignore[attr-defined]
from opentelemetry.sdk._configuration import _OTelSDKConfigurator

logger = logging.getLogger("spanfold")

#: Entry point names (group ``opentelemetry_instrumentor``) other projects give their instrumentation of a library
#: spanfold traces.
TRACED_LIBRARY_NAMES = frozenset(
    {
        "openai",
        "openai_v2",
        "anthropic",
        "google_genai",
        "google-genai",
        "groq",
        "mistralai",
        "ollama",
        "cohere",
        "litellm",
        "openai_agents",
    }
)


def other_instrumentations() -> dict[str, list[str]]:
    """Installed instrumentations of the libraries spanfold traces, not spanfold's: entry point name -> the
    distributions that register it (two projects may use one name: ``openai``)."""
    from importlib.metadata import entry_points

    out: dict[str, list[str]] = {}
    for ep in entry_points(group="opentelemetry_instrumentor"):
        if ep.value.startswith("spanfold.") or ep.name not in TRACED_LIBRARY_NAMES:
            continue
        dist = getattr(ep, "dist", None)
        name = getattr(dist, "name", None) or ep.value.split(":")[0]
        if name not in out.setdefault(ep.name, []):
            out[ep.name].append(name)
    return out


def defaults(environ: MutableMapping[str, str], *, traces: str = "spanfold") -> list[str]:
    """Set the zero-code defaults in ``environ`` (the user's own values win); return the other instrumentations it
    turned off."""
    environ.setdefault("OTEL_TRACES_EXPORTER", traces)
    environ.setdefault("OTEL_METRICS_EXPORTER", "none")
    environ.setdefault("OTEL_LOGS_EXPORTER", "none")
    if "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS" in environ:
        return []
    others = other_instrumentations()
    if others:
        environ["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = ",".join(sorted(others))
    return sorted({dist for dists in others.values() for dist in dists})


def turned_off_line(names: list[str], where: str = "spanfold") -> str:
    """The one line that says which other instrumentations were turned off."""
    return (
        f"{where}: turned off other instrumentations of the libraries spanfold traces: {', '.join(names)} (one span "
        "per call; set OTEL_PYTHON_DISABLED_INSTRUMENTATIONS to choose yourself)"
    )


def say_turned_off(names: list[str]) -> None:
    if names:
        logger.warning("%s", turned_off_line(names))


_TRACES_PROTOCOL = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"


def _exporter_installed(name: str) -> bool:
    from importlib.metadata import entry_points

    return any(ep.name == name for ep in entry_points(group="opentelemetry_traces_exporter"))


def otlp_exporter(environ: MutableMapping[str, str], installed: Any = _exporter_installed) -> str | None:
    """Make ``OTEL_TRACES_EXPORTER=otlp`` mean an OTLP exporter that is installed: with no protocol set and no gRPC
    exporter, the HTTP/protobuf one; with neither, ``otlp`` is replaced by spanfold's own exporter. Returns the line
    to tell the user (None: nothing to say)."""
    names = [n.strip() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    if "otlp" not in names:
        return None
    if environ.get(_TRACES_PROTOCOL) or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or installed("otlp_proto_grpc"):
        return None
    if installed("otlp_proto_http"):
        environ[_TRACES_PROTOCOL] = "http/protobuf"
        return None
    kept = [n for n in names if n != "otlp"]
    environ["OTEL_TRACES_EXPORTER"] = ",".join(kept or ["spanfold"])
    return (
        "spanfold: OTEL_TRACES_EXPORTER=otlp, but no OTLP exporter is installed: pip install 'spanfold[otlp]' "
        "(OTLP/HTTP); meanwhile the traces are written to spanfold's files only"
    )


class SpanfoldDistro(BaseDistro):  # type: ignore[misc]
    """``opentelemetry-instrument``'s distro when spanfold is installed (``OTEL_PYTHON_DISTRO=spanfold`` picks it when
    another distro is installed too)."""

    def _configure(self, **kwargs: Any) -> None:
        say_turned_off(defaults(os.environ))
        line = otlp_exporter(os.environ)
        if line:
            logger.warning("%s", line)


class SpanfoldConfigurator(_OTelSDKConfigurator):
    """The OTel SDK's own configurator (exporters by entry point name, from ``OTEL_*``), under spanfold's name."""


def run_environment(base: Mapping[str, str], bootstrap: str) -> tuple[dict[str, str], list[str]]:
    """The environment ``spanfold run`` starts its command with: ``bootstrap`` (the directory of spanfold's
    ``sitecustomize``) first on ``PYTHONPATH``, and the zero-code defaults. Also returns the other instrumentations
    turned off."""
    env = dict(base)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = bootstrap + (os.pathsep + path if path else "")
    env["SPANFOLD_RUN"] = "1"
    turned_off = defaults(env)  # read by an opentelemetry-instrument inside (its sitecustomize then runs, not ours)
    return env, turned_off
