"""PII kept out (HOLISTIC_REDACT=on): what reaches the work stream, from the gRPC API and from the OTLP
receiver, holds no email, phone number, Luhn-valid card, checksum-valid IBAN, IP address or team
pattern, in any text field; a retry is still a duplicate; the signatures of the families that read
text record the redaction."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from gateway.redaction import Redactor, tag_of
from holistic.errors import ConfigError
from holistic.queue import envelope
from holistic.redis.keys import Keys
from holistic.settings import load_settings
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import prediction_pb2 as pb
from holistic_client import ClientError
from tests.clients.test_otlp_receiver import ReceiverThread
from tests.conftest import drain
from tests.factories import prediction

TEAM = {"TICKET": r"TCK-[0-9]{6}"}
# every entity once, and the look-alikes that must stay: a 16-digit number failing Luhn, an IBAN with a
# wrong check digit
PII = (
    "mail bob@example.com, call +1 415-555-0132, card 4111 1111 1111 1111, "
    "IBAN GB82 WEST 1234 5698 7654 32, from 192.168.1.20 or 2001:db8::1, re TCK-123456; "
    "keep 4111 1111 1111 1112 and GB82 WEST 1234 5698 7654 33"
)
REDACTED = (
    "mail <EMAIL_ADDRESS>, call <PHONE_NUMBER>, card <CREDIT_CARD>, "
    "IBAN <IBAN_CODE>, from <IP_ADDRESS> or <IP_ADDRESS>, re <TICKET>; "
    "keep 4111 1111 1111 1112 and GB82 WEST 1234 5698 7654 33"
)


def stream(r: Any, gw: Any) -> list[tuple[envelope.Entry, Any]]:
    keys = Keys(gw.settings.key_prefix)
    entries = [envelope.parse(i, f) for i, f in r.xrange(keys.stream)]
    return [(e, e.envelope()) for e in entries]


def texts(p: pb.Prediction) -> dict[str, Any]:
    return {"input": p.input, "output": p.output, "references": list(p.references), "source": p.source,
            "metadata": dict(p.metadata)}  # fmt: skip


def pii_prediction(pid: str = "p1", text: str = PII) -> pb.Prediction:
    return prediction(pid, input=text, output=text, references=[text, "Paris"], source=text,
                      metadata={"user": text, "plain": "no digits here"})  # fmt: skip


@pytest.mark.parametrize("wire_proof", [True, False])  # the C proof's path and the Python parse's
def test_every_entity_in_every_field_is_replaced_before_the_stream(make_gateway, r, wire_proof):
    gw = make_gateway(redact="on", redact_patterns=TEAM, gateway_wire_proof=wire_proof)
    with gw.client() as c:
        c.submit([pii_prediction()], batch_id="b-1", model="m1")
    [(entry, env)] = stream(r, gw)
    metadata = {"user": REDACTED, "plain": "no digits here"}
    assert texts(env.predictions[0]) == {"input": REDACTED, "output": REDACTED, "references": [REDACTED, "Paris"],
                                         "source": REDACTED, "metadata": metadata}  # fmt: skip
    for secret in (b"bob@example.com", b"415-555-0132", b"4111 1111 1111 1111", b"192.168.1.20", b"TCK-123456"):
        assert secret not in entry.payload  # the stored bytes themselves, not only their parse
    assert env.redaction == tag_of(gw.settings) and env.redaction.startswith("on:v1:")


def test_off_by_default_stores_text_as_sent(make_gateway, r):
    gw = make_gateway()
    assert gw.settings.redact == "off"
    with gw.client() as c:
        c.submit([pii_prediction()], batch_id="b-1", model="m1")
    [(_, env)] = stream(r, gw)
    assert texts(env.predictions[0])["output"] == PII and env.redaction == ""


def test_a_retry_is_a_duplicate_and_other_pii_is_other_content(make_gateway, r):
    """The idempotency digest is of the batch as submitted: its retry is recognised (and not written
    again), while the same batch_id with another email is other content, though both redact alike."""
    gw = make_gateway(redact="on")
    with gw.client() as c:
        first = c.submit([pii_prediction()], batch_id="b-1", model="m1")
        again = c.submit([pii_prediction()], batch_id="b-1", model="m1")
        with pytest.raises(ClientError) as exc:
            c.submit([pii_prediction(text=PII.replace("bob@", "eve@"))], batch_id="b-1", model="m1")
    assert (first.duplicate, again.duplicate, again.sequence) == (False, True, first.sequence)
    assert exc.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert len(stream(r, gw)) == 1


def test_signatures_record_the_redaction_of_the_families_that_read_text(make_gateway, make_worker, settings):
    """The tag travels in the envelope: workers whose own settings say nothing of redaction record it."""
    gw = make_gateway(redact="on", families=["accuracy", "efficiency"])
    plain = make_gateway(families=["accuracy", "efficiency"])
    with gw.client() as c:
        c.submit([prediction("p1", output="mail bob@example.com", references=["mail bob@example.com"])],
                 batch_id="b-1", model="m1")  # fmt: skip
    with plain.client() as c:
        c.submit([prediction("p2")], batch_id="b-2", model="plain")
    assert settings.redact == "off"
    drain(make_worker("accuracy"), make_worker("efficiency"))
    with gw.client() as c:
        fams = {f.family: f for f in c.get_profile("m1").families}
    assert fams["accuracy"].signature.options["redaction"] == tag_of(gw.settings)
    assert f"|redaction:{tag_of(gw.settings)}" in fams["accuracy"].signature.text
    assert "redaction" not in fams["efficiency"].signature.options  # timings: redaction cannot change them
    with plain.client() as c:  # a batch accepted without redaction: no such option
        fams = {f.family: f for f in c.get_profile("plain").families}
    assert "redaction" not in fams["accuracy"].signature.options


def test_the_otlp_receiver_path_is_redacted_too(make_gateway, r):
    token = "otel-team-token"
    gw = make_gateway(tokens=token, redact="on", redact_patterns=TEAM)
    receiver = ReceiverThread(target=gw.address, default_scenario="support_qa", default_task="open_qa")
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True, headers={"authorization": f"Bearer {token}"})
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    attrs = {"gen_ai.request.model": "atlas", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": PII,
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": PII,
             "holistic.references": [PII], "holistic.source": PII}  # fmt: skip
    try:
        provider.get_tracer("app").start_span("chat atlas", attributes=attrs).end()
        assert provider.force_flush(30_000)
        provider.shutdown()
    finally:
        receiver.stop()
    [(_, env)] = stream(r, gw)
    p = env.predictions[0]
    assert (p.input, p.output, list(p.references), p.source) == (REDACTED, REDACTED, [REDACTED], REDACTED)


def test_ranking_documents_and_chosen_entities():
    """Only the configured entities go (here: emails), in the configured format; a ranking document's
    model_output is redacted as well; a request without PII is left as it was."""
    redactor = Redactor(load_settings(redact="on", redact_entities="EMAIL_ADDRESS", redact_format="[{entity}]"))
    p = pb.Prediction(id="r1", output="a@b.org at 10.0.0.1")
    p.ranking.documents.add(id="d1", model_output="yes, see a@b.org")
    request = es.SubmitPredictionsRequest(batch_id="b", predictions=[p])
    assert redactor.request(request)
    assert request.predictions[0].output == "[EMAIL_ADDRESS] at 10.0.0.1"
    assert request.predictions[0].ranking.documents[0].model_output == "yes, see [EMAIL_ADDRESS]"
    assert not redactor.request(es.SubmitPredictionsRequest(predictions=[pb.Prediction(output="Paris, 1889")]))


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [("redact_entities", "EMAIL,PHONE_NUMBER", "unknown entities ['EMAIL']"),
     ("redact_patterns", '{"T": "a["}', "pattern 'T' is not a valid regex"),
     ("redact_format", "<{kind}>", "must name only {entity}"),
     ("redact", "yes", "HOLISTIC_REDACT")],
)  # fmt: skip
def test_bad_settings_name_the_variable(setting, value, said):
    with pytest.raises(ConfigError) as exc:
        load_settings(**{setting: value})
    assert said in str(exc.value) and f"HOLISTIC_{setting.upper()}" in str(exc.value)


def test_years_and_short_numbers_are_not_phone_numbers():
    """Presidio's phone recognizer alone takes a four-digit year for a phone number (score 0.4); a text
    needs five digits before it is looked at for one, so scores on dates and counts stay as they were."""
    redactor = Redactor(load_settings(redact="on"))
    assert redactor.text("Was it founded before 1686? In 1698, 42 km away.") == (
        "Was it founded before 1686? In 1698, 42 km away."
    )
    assert redactor.text("call 020 7946 0958 in 1698") == "call <PHONE_NUMBER> in 1698"
