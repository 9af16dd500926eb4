"""The ``sample`` option: ``spanfold.Sample`` checked when made, its text form (``SPANFOLD_SAMPLE``, ``spanfold serve
--sample``), and a clear error naming the option for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import spanfold
from spanfold import config
from spanfold.cli import main as cli
from spanfold.sampling.decision import by_trace_id
from spanfold.sampling.option import Sample, parse


def test_the_text_form() -> None:
    assert parse("0.1") == Sample(rate=0.1)
    assert parse(" off ") is None and parse("") is None
    full = parse("rate=0.05, slower_than=2m, costlier_than=$0.5, keep_errors=false, failing=a.yaml, failing=b.yaml")
    assert full == Sample(
        rate=0.05, slower_than=120.0, costlier_than=0.5, keep_errors=False, failing=("a.yaml", "b.yaml")
    )
    assert parse("rate=1,slower_than=250ms") == Sample(rate=1.0, slower_than=0.25)
    assert full is not None and full.spec_files == ("a.yaml", "b.yaml")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("2", "rate=2.0: expected a fraction from 0 to 1"),
        ("rate=-0.1", "expected a fraction from 0 to 1"),
        ("rate=nan", "rate=nan: expected a finite number"),
        ("abc", "expected a rate (such as 0.1) or key=value pairs"),
        ("slower_than=3", "rate is missing"),
        ("rate=0.1,slower_than=0", "slower_than=0.0: expected a positive number of seconds"),
        ("rate=0.1,slower_than=soon", "slower_than='soon': expected a number"),
        ("rate=0.1,costlier_than=-1", "costlier_than=-1.0: expected US dollars, 0 or more"),
        ("rate=0.1,keep_errors=maybe", "keep_errors='maybe': expected true or false"),
        ("rate=0.1,rate=0.2", "rate is given twice"),
        ("rate=0.1,speed=3", "expected key=value, the keys being rate, keep_errors"),
        ("rate=0.1,failing=", "failing: a spec file's path is empty"),
    ],
)
def test_a_bad_environment_value_is_named(text: str, said: str) -> None:
    with pytest.raises(config.ConfigError) as caught:
        config.load({}, {"SPANFOLD_SAMPLE": text})
    assert str(caught.value).startswith("SPANFOLD_SAMPLE: ") and said in str(caught.value)


@pytest.mark.parametrize("given", [True, [0.1], {"rate": 0.1}, 1.5])
def test_a_bad_value_given_to_init_is_named(given: object) -> None:
    with pytest.raises(config.ConfigError, match=r"^sample"):
        spanfold.init(sample=given)


def test_sample_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="rate=2"):
        Sample(rate=2)
    with pytest.raises(ValueError, match="is not a check"):
        Sample(rate=0.1, failing=[42])
    with pytest.raises(ValueError, match="keep_errors"):
        Sample(rate=0.1, keep_errors="yes")  # type: ignore[arg-type]
    assert config.load({"sample": 0.25}).sample == Sample(rate=0.25)
    assert config.load({"sample": "off"}).sample is None


def test_a_missing_spec_file_is_said_by_init(tmp_path: Path) -> None:
    with pytest.raises(config.ConfigError, match=r"sample: failing: .*no such file"):
        spanfold.init(output=str(tmp_path), sample=Sample(rate=0.1, failing=str(tmp_path / "nope.yaml")))
    assert spanfold.stats().get("sampling.kept") is None


def test_serve_refuses_a_bad_sample(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--output", str(tmp_path), "--sample", "rate=7"])
    assert result.exit_code == 2 and "sample: rate=7.0: expected a fraction from 0 to 1" in result.output


def test_the_rate_is_the_trace_ids_random_part() -> None:
    """The 56 rightmost bits (W3C Trace Context level 2's random part): a rate keeps a subset of what a higher rate
    keeps, and about its share of random ids."""
    import random

    rng = random.Random(3)
    ids = [rng.getrandbits(128) for _ in range(20000)]
    low = {t for t in ids if by_trace_id(t, 0.1)}
    high = {t for t in ids if by_trace_id(t, 0.3)}
    assert low <= high and abs(len(low) - 2000) < 200 and abs(len(high) - 6000) < 300
    assert all(by_trace_id(t, 1.0) for t in ids) and not any(by_trace_id(t, 0.0) for t in ids)
    assert by_trace_id(0xFFFF << 56, 0.01)  # the leading bits do not count


def test_serve_says_what_sampling_kept_and_dropped_when_it_stops() -> None:
    from spanfold.commands.serve import status_line
    from spanfold.exporter.pipeline.receiver import status_of

    counted = {"traces_written": 12, "sampling.kept": 12, "sampling.kept.error": 2, "sampling.kept.rate": 10}
    counted |= {"sampling.dropped": 88, "sampling.dropped.rate": 88}
    status = status_of(counted, {"queue_depth": 0})
    assert status["sampling"] == {"kept": {"total": 12, "error": 2, "rate": 10}, "dropped": {"total": 88, "rate": 88}}
    assert status_line(status) == (
        "spanfold serve: 12 traces written; kept by sampling: 12 (error 2, rate 10); dropped by sampling: 88 (rate 88)"
    )
    assert status_line(status_of({"traces_written": 3}, {})) == "spanfold serve: 3 traces written"
