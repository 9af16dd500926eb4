"""An SDK span as the fold reads it (:func:`~spanfold.exporter.records.from_readable`): its attributes copied once into
a plain dict of their own, in order, whatever mapping the SDK hands out."""

from __future__ import annotations

from types import MappingProxyType

from opentelemetry.sdk.trace import TracerProvider

from spanfold.exporter.records import _plain, from_readable


def test_an_sdk_span_s_attributes_are_a_plain_dict_of_their_own() -> None:
    tracer = TracerProvider().get_tracer("records")
    with tracer.start_as_current_span("chat m") as live:
        live.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 3})
        live.set_attribute("gen_ai.response.finish_reasons", ["stop"])
    record = from_readable(live)  # type: ignore[arg-type]
    assert type(record.attributes) is dict
    assert list(record.attributes.items()) == [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.usage.input_tokens", 3),
        ("gen_ai.response.finish_reasons", ("stop",)),
    ]
    record.attributes["spanfold.test"] = True
    assert "spanfold.test" not in live.attributes  # type: ignore[attr-defined]


def test_any_mapping_is_copied_into_a_plain_dict() -> None:
    class Reader:  # a mapping without copy()
        def __init__(self) -> None:
            self.data = {"a": 1, "b": "two"}

        def keys(self) -> list[str]:
            return list(self.data)

        def __getitem__(self, key: str) -> object:
            return self.data[key]

    class Subclass(dict[str, object]):
        def copy(self) -> Subclass:
            return Subclass(self)

    for source in (Reader(), MappingProxyType({"a": 1, "b": "two"}), Subclass(a=1, b="two")):
        copied = _plain(source)  # type: ignore[arg-type]
        assert type(copied) is dict and copied == {"a": 1, "b": "two"}
