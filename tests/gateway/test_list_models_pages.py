"""ListModels in pages (AIP-158): name order, a page never past HOLISTIC_MAX_LIST_MODELS, tokens that
resume after the last model listed, clear errors for a bad size or token, and a tenant's models
indexed for paging when they were accepted before the index existed."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from gateway.model_pages import encode_token
from holistic.redis.keys import Keys
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from tests.factories import prediction
from tests.gateway.test_read_bounds import hgetall_calls, submit_to


@pytest.fixture
def small_pages(make_gateway):
    """A gateway whose pages hold at most 3 models."""
    gw = make_gateway(max_list_models=3)
    with grpc.insecure_channel(gw.address) as channel:
        yield es_grpc.EvaluationServiceStub(channel)


def pages(stub, page_size: int = 0) -> list[list[str]]:
    """Every page, following next_page_token until it is empty."""
    out, token = [], ""
    while True:
        reply = stub.ListModels(es.ListModelsRequest(page_size=page_size, page_token=token))
        out.append([m.model for m in reply.models])
        token = reply.next_page_token
        if not token:
            return out


def test_pages_list_every_model_once_in_name_order_and_read_only_their_summaries(small_pages, r):
    stub = small_pages
    submit_to(stub, "m5", "m0", "m3", "m6", "m1", "m4", "m2")
    r.config_resetstat()
    first = stub.ListModels(es.ListModelsRequest())
    assert [m.model for m in first.models] == ["m0", "m1", "m2"]  # page_size 0: the maximum, 3
    assert first.total_size == 7 and first.next_page_token
    assert all(m.accepted_predictions == 1 and m.accepted_batches == 1 for m in first.models)
    assert hgetall_calls(r) == 3  # the page's summaries, not the tenant's
    assert pages(stub) == [["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6"]]
    assert pages(stub, page_size=2) == [["m0", "m1"], ["m2", "m3"], ["m4", "m5"], ["m6"]]
    assert pages(stub, page_size=100) == pages(stub)  # lowered to the maximum
    assert pages(stub, page_size=7 - 3)[0] == ["m0", "m1", "m2"]


def test_the_last_page_is_exactly_full_and_says_so(small_pages):
    submit_to(small_pages, "a", "b", "c")
    reply = small_pages.ListModels(es.ListModelsRequest())
    assert [m.model for m in reply.models] == ["a", "b", "c"] and reply.next_page_token == ""
    assert small_pages.ListModels(es.ListModelsRequest()).total_size == 3


def test_models_added_between_pages_are_listed_after_the_token_and_never_twice(small_pages):
    stub = small_pages
    submit_to(stub, "m0", "m2", "m4", "m6")
    first = stub.ListModels(es.ListModelsRequest(page_size=2))
    assert [m.model for m in first.models] == ["m0", "m2"]
    submit_to(stub, "m1", "m3")  # one before the token, one after it
    rest = stub.ListModels(es.ListModelsRequest(page_size=2, page_token=first.next_page_token))
    assert [m.model for m in rest.models] == ["m3", "m4"] and rest.total_size == 6
    last = stub.ListModels(es.ListModelsRequest(page_size=2, page_token=rest.next_page_token))
    assert [m.model for m in last.models] == ["m6"] and last.next_page_token == ""


def test_a_tenant_without_models_gets_an_empty_last_page(small_pages):
    reply = small_pages.ListModels(es.ListModelsRequest())
    assert list(reply.models) == [] and reply.next_page_token == "" and reply.total_size == 0


@pytest.mark.parametrize(
    ("request_", "field", "says"),
    [
        (es.ListModelsRequest(page_size=-1), "page_size", "not -1"),
        (es.ListModelsRequest(page_token="not a token!"), "page_token", "next_page_token"),
        (es.ListModelsRequest(page_token=encode_token(b"m0")[:-1] + "*"), "page_token", "next_page_token"),
        (es.ListModelsRequest(page_token="AA"), "page_token", "next_page_token"),  # version 0
        (es.ListModelsRequest(page_token="AQ"), "page_token", "next_page_token"),  # version 1, no name
        (es.ListModelsRequest(page_token="A" * 2000), "page_token", "next_page_token"),
    ],
)
def test_a_bad_page_size_or_token_is_invalid_argument_naming_it(small_pages, request_, field, says):
    with pytest.raises(grpc.RpcError) as exc:
        small_pages.ListModels(request_)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in exc.value.details() and says in exc.value.details(), exc.value.details()


def test_a_page_token_that_is_not_utf8_on_the_wire_is_invalid_argument_naming_it(make_gateway):
    gw = make_gateway()
    with grpc.insecure_channel(gw.address) as channel:
        call = channel.unary_unary("/holistic.v1.EvaluationService/ListModels")  # bytes in, bytes out
        with pytest.raises(grpc.RpcError) as exc:
            call(b"\x12\x02\xff\xfe")  # field 2 (page_token), two bytes that are not UTF-8
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "page_token" in exc.value.details()


def test_the_token_of_a_page_resumes_on_any_gateway_and_at_any_size(make_gateway):
    """A token names the last model listed, nothing of the gateway that gave it."""
    one, two = make_gateway(max_list_models=2), make_gateway(max_list_models=50)
    with grpc.insecure_channel(one.address) as a, grpc.insecure_channel(two.address) as b:
        first, second = es_grpc.EvaluationServiceStub(a), es_grpc.EvaluationServiceStub(b)
        submit_to(first, *(f"m{i}" for i in range(6)))
        token = first.ListModels(es.ListModelsRequest()).next_page_token
        assert [m.model for m in second.ListModels(es.ListModelsRequest(page_token=token)).models] == [
            "m2",
            "m3",
            "m4",
            "m5",
        ]


def test_models_accepted_before_the_index_existed_are_indexed_by_the_first_listing(small_pages, r):
    """A gateway from before the index wrote only the model set: the first ListModels indexes every name
    of the set (SSCAN, 1,000 a round trip) and its pages list them all; later listings add nothing."""
    stub = small_pages
    submit_to(stub, "m2", "m0", "m1")
    keys = Keys()
    older = [f"old{i:04}" for i in range(2500)]  # as an older gateway left them: in the set only
    r.sadd(keys.models(), *older)
    r.delete(keys.models_index())
    r.config_resetstat()
    first = stub.ListModels(es.ListModelsRequest(page_size=2))
    assert [m.model for m in first.models] == ["m0", "m1"] and first.total_size == 2503
    assert r.zcard(keys.models_index()) == 2503
    sscans = int(r.info("commandstats")["cmdstat_sscan"]["calls"])
    assert sscans >= 3  # 2,503 names, 1,000 a chunk
    listed = [m for page in pages(stub) for m in page]
    assert listed == ["m0", "m1", "m2", *older]
    assert int(r.info("commandstats")["cmdstat_sscan"]["calls"]) == sscans  # indexed once


def test_the_python_client_and_the_dashboard_list_every_page(make_gateway):
    from holistic_dashboard.gateway_link import GatewayLink

    gw = make_gateway(max_list_models=2)
    names = [f"m{i}" for i in range(5)]
    with gw.client() as client:
        for name in reversed(names):
            client.submit([prediction("a")], batch_id="b1", model=name)
        assert [m.model for m in client.list_models()] == names
        assert [m.model for m in client.list_models(page_size=1)] == names
        assert next(client.iter_models()).model == "m0"

    async def dashboard() -> list[str]:
        link = GatewayLink(gw.address)
        try:
            return [m.model for m in await link.list_models()]
        finally:
            await link.close()

    assert asyncio.run(dashboard()) == names
