"""Zero-code: ``opentelemetry-instrument python app.py`` with spanfold installed, and ``spanfold run -- CMD``.

``opentelemetry-instrument`` configures the SDK through the installed *distro* and *configurator*. spanfold ships
both (entry points ``opentelemetry_distro`` / ``opentelemetry_configurator``, named ``spanfold``), so that in a venv
with spanfold the command works as typed:

* traces go to spanfold's exporter unless ``OTEL_TRACES_EXPORTER`` says otherwise (``spanfold,otlp`` for both);
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


class SpanfoldDistro(BaseDistro):  # type: ignore[misc]
    """``opentelemetry-instrument``'s distro when spanfold is installed (``OTEL_PYTHON_DISTRO=spanfold`` picks it when
    another distro is installed too)."""

    def _configure(self, **kwargs: Any) -> None:
        say_turned_off(defaults(os.environ))


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
