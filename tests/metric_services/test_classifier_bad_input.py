"""Bad text end to end: invalid UTF-8, lone surrogates, 1 MB and empty outputs. A clear outcome, nothing lost."""

from __future__ import annotations

import grpc
import pytest

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import profile_pb2 as pp
from holistic_client.jsonl import read_predictions
from tests.conftest import drain
from tests.factories import prediction


def test_bad_and_huge_outputs_are_all_counted_by_both_families(client, make_worker, gateway):
    huge = "a perfectly polite sentence " * 37_000  # 1,036,000 bytes: under the 1 MiB text limit
    preds = [
        prediction("empty", output=""),
        prediction("blank", output=" \n\t "),
        prediction("huge", output=huge),
        prediction("emoji", output="😡🙂 ΣΊΣΥΦΟΣ 連絡 \x00 \ufffd"),
        prediction("swear", output="shut up you stupid idiot", groups={"gender": "female"}),
        prediction("kind", output="She is a wonderful doctor", groups={"gender": "male"}),
    ]
    assert client.submit(preds, model="m", batch_id="bad-1").accepted_count == 6
    # Invalid UTF-8 never reaches a worker: the gateway rejects the batch and names the field.
    raw = es.SubmitPredictionsRequest(batch_id="bad-2", model="m", predictions=[prediction("x", output="AB")])
    data = raw.SerializeToString().replace(b"AB", b"\xff\xfe")
    with grpc.insecure_channel(gateway.address) as ch:
        call = ch.unary_unary(
            "/holistic.v1.EvaluationService/SubmitPredictions",
            request_serializer=lambda b: b,
            response_deserializer=es.SubmitPredictionsResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as exc:
            call(data)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    drain(make_worker("toxicity"), make_worker("bias"))
    prof = client.get_profile("m")
    fams = {f.family: f for f in prof.families}
    assert fams["toxicity"].count == 6 and fams["toxicity"].skipped == 2
    assert fams["bias"].count == 6 and fams["bias"].skipped == 2
    tox = {m.name: m for m in fams["toxicity"].metrics}
    assert tox["toxic_frac"].count == 4 and tox["toxic_frac"].value == pytest.approx(0.25)  # only "swear"
    bias = {m.name: m.value for m in fams["bias"].metrics}
    assert bias["toxic_rate[gender=female]"] == 1.0 and bias["toxic_rate[gender=male]"] == 0.0
    dims = {d.kind: d for d in prof.dimensions}
    assert dims[pp.DIMENSION_KIND_TOXICITY].score == pytest.approx(0.75)
    assert dims[pp.DIMENSION_KIND_BIAS].HasField("score")  # "she", "doctor": gender words present


def test_lone_surrogates_in_a_file_are_rejected_by_line(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text('{"id": "a", "output": "fine"}\n{"id": "b", "output": "x\\ud800y"}\n', encoding="utf-8")
    lines = list(read_predictions(path))
    assert lines[0].prediction is not None and lines[0].prediction.output == "fine"
    assert lines[1].prediction is None and lines[1].number == 2 and "surrogate" in lines[1].error.lower()
