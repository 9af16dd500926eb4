"""Which process a span came from (:func:`~spanfold.exporter.records.process_key`), remembered per resource object:
an SDK's resource (immutable) is keyed once, a plain dict each time (it may change)."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource

from spanfold.exporter.records import SenderResource, process_key


def test_an_sdk_resource_keeps_its_key_and_two_processes_differ() -> None:
    one = Resource.create({"service.name": "a", "service.instance.id": "1"}).attributes
    other = Resource.create({"service.name": "a", "service.instance.id": "2"}).attributes
    assert process_key(one) is process_key(one)
    assert process_key(one) != process_key(other)
    assert process_key(one) == process_key(dict(one))  # the same attributes: the same process


def test_a_plain_dict_is_keyed_as_it_is_now() -> None:
    resource = {"service.name": "a"}
    before = process_key(resource)
    resource["service.instance.id"] = "2"
    assert process_key(resource) != before
    assert process_key(resource) == process_key({"service.name": "a", "service.instance.id": "2"})


def test_senders_of_one_resource_are_two_processes() -> None:
    attributes = {"service.name": "a"}
    first, second = SenderResource(attributes, 1), SenderResource(attributes, 2)
    assert process_key(first) != process_key(second)
    assert process_key(first) == process_key(SenderResource(attributes, 1))
    assert process_key(first) is process_key(first)
