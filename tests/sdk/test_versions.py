"""The supported ranges: stated once per library and read alike by the extras, zero-code and ``init()``; a library
outside its range is refused (one line naming the installed version and the range) and the others are traced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from spanfold.instrumentation import registry
from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.instrumentation.toolkit import versions

from . import agents
from .test_zero_code_every_major import INSTRUMENT, zero_code_env

tomllib = pytest.importorskip("tomllib")
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _reqs(specs: list[str]) -> dict[str, str]:
    return {Requirement(s).name: str(Requirement(s).specifier) for s in specs}


def test_the_extras_and_instruments_any_state_each_instrumentors_range() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    declared = _reqs(extras["instruments-any"])
    for name, (_, target) in registry.INSTRUMENTORS.items():
        deps = _reqs(list(registry._load(target)().instrumentation_dependencies()))
        for lib, spec in deps.items():
            assert declared.get(lib) == spec, (
                f"pyproject.toml: add {lib}{spec} (the {name} instrumentor's range) to instruments-any, or zero-code "
                "skips spanfold's instrumentors where only that library is installed"
            )
    assert _reqs(extras["openai"]) == _reqs(list(OpenAIInstrumentor().instrumentation_dependencies()))
    assert _reqs(extras["anthropic"]) == _reqs(list(AnthropicInstrumentor().instrumentation_dependencies()))
    assert _reqs(extras["openai"]) == {"openai": str(Requirement("openai>=1.40,<4").specifier)}
    assert _reqs(extras["anthropic"]) == {"anthropic": str(Requirement("anthropic>=0.40,<3").specifier)}


def test_the_registry_entry_points_and_extras_name_each_instrumentor_alike() -> None:
    """Each instrumentor is written once as a class (its ``library`` and ``dependencies``); the registry, the
    ``opentelemetry_instrumentor`` entry points and the extras must say the same of it."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    entry_points = project["entry-points"]["opentelemetry_instrumentor"]
    assert entry_points == {f"spanfold_{name}": target for name, (_, target) in registry.INSTRUMENTORS.items()}
    extras = project["optional-dependencies"]
    for name, (library, target) in registry.INSTRUMENTORS.items():
        cls = registry._load(target)
        assert cls.library == library, f"{target}: library {cls.library!r}, the registry says {library!r}"
        extra = _reqs(extras[name.replace("_", "-")])  # the extra a user installs for it
        for dist, spec in _reqs(list(cls.dependencies)).items():
            assert extra.get(dist, spec) == spec, f"the {name} extra's {dist} range differs from {target}'s"


def test_a_library_that_is_not_installed_is_no_conflict() -> None:
    assert versions.outside(["surely-not-installed-spanfold-lib >= 1"]) is None


# The app: openai and anthropic agents, spanfold.init() twice (the refusal is said once per process).
INIT_APP = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {sdk!r})
    import spanfold, agents
    for out in sys.argv[1:]:
        spanfold.init(output=out, capture_content=True)
        agents.run("chat")
        agents.run("anthropic")
        spanfold.shutdown()
    print("done")
    """
)


def _shadow_openai(tmp_path: Path, version: str) -> dict[str, str]:
    """An environment where the metadata of ``openai`` says ``version`` (a dist-info ahead of site-packages on the
    path: ``importlib.metadata`` finds it first), the SDK itself being the installed one."""
    shadow = tmp_path / "shadow"
    info = shadow / f"openai-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: openai\nVersion: {version}\n")
    path = [str(shadow), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path)}


def _check(out: Path, stderr: str, traces_expected: int) -> None:
    refusals = [line for line in stderr.splitlines() if "openai 0.28.1" in line]
    assert refusals == [
        "spanfold: openai 0.28.1 is installed, but spanfold traces openai >= 1.40, < 4 only; its calls are not traced"
        " (the other libraries are)"
    ], stderr
    assert "Traceback" not in stderr, stderr
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    models = [t for t in traces if any(e["role"] == "assistant" for e in t)]
    assert models == [agents.expected("anthropic")] * traces_expected  # anthropic traced, openai not


def test_init_refuses_an_openai_outside_the_range_once_and_traces_anthropic(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(INIT_APP.format(sdk=str(Path(agents.__file__).parent)))
    outs = [tmp_path / "a", tmp_path / "b"]
    env = {**os.environ, **_shadow_openai(tmp_path, "0.28.1")}
    done = subprocess.run(
        [sys.executable, str(app), *map(str, outs)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    _check(outs[0], done.stderr, 1)
    second = [json.loads(line) for line in (outs[1] / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [t for t in second if any(e["role"] == "assistant" for e in t)] == [agents.expected("anthropic")]


@pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-instrument is not installed")
def test_zero_code_decides_as_init_does(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    env = {**zero_code_env(out), **_shadow_openai(tmp_path, "0.28.1")}
    assert INSTRUMENT is not None
    done = subprocess.run(
        [INSTRUMENT, sys.executable, agents.__file__, "chat", "anthropic"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    _check(out, done.stderr, 1)
