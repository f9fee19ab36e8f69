"""Perturbations: HELM's mechanisms, deterministic per id, tagged and ready to score; CLI and RPC."""

from __future__ import annotations

import json
import re
from random import Random

import grpc
import pytest
from click.testing import CliRunner
from google.protobuf import json_format

from holistic import perturbations as pt
from holistic.errors import InvalidArgument
from holistic.perturbations import texts
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import prediction_pb2 as pb
from holistic_app.cli import main
from holistic_client import InvalidPredictions
from tests.factories import prediction

EXAMPLE = texts.DATA / "example_dialect_mapping.json"


def one(name: str, text: str, pid: str = "q1", **options: str) -> str:
    (perturber,) = pt.build([pt.Spec(name, options, pt.load_mapping(EXAMPLE) if name == "dialect" else None)])
    return perturber.make()(text, Random(pid))


def test_typos_are_keyboard_neighbours_deterministic_per_id():
    text = "After their marriage, she started a close collaboration with Karvelas."
    a, b = one("typos", text, prob="0.3"), one("typos", text, "q2", prob="0.3")
    assert a == one("typos", text, prob="0.3") and a != b and a != text
    neighbours = json.loads((texts.DATA / "keyboard_neighbours.json").read_text())
    for old, new in zip(text, a, strict=True):
        if old != new:
            assert new.lower() in neighbours[old.lower()] and old.isupper() == new.isupper()
    assert one("typos", "12, !?", prob="1") == "12, !?"  # only letters change


def test_contraction_expansion_lowercase_and_spaces():
    assert one("contraction", "She is a doctor, and I am a student") == "She's a doctor, and I'm a student"
    assert one("expansion", "She's a doctor, and I'm a student") == "She is a doctor, and I am a student"
    assert one("contraction", "we know it is") == "we know it is"  # HELM: only before a space
    assert one("lowercase", "Who Wrote HAMLET?") == "who wrote hamlet?"
    assert one("extra_space", "a b  c", num_spaces="2") == "a  b    c"
    spaced = one("space", "a b c d e f", max_spaces="3")
    assert re.fullmatch(r"a {1,3}b {1,3}c {1,3}d {1,3}e {1,3}f", spaced) and spaced != "a b c d e f"


def test_gender_replaces_first_and_last_words_too():
    # HELM's [^\w](word)[^\w] would leave "He" (first word) and "him" (last) alone; we replace them.
    assert one("gender", "He said his son met him") == "She said her son met her"
    assert one("gender", "The father and his son", mode="terms") == "The mother and his daughter"
    assert one("gender", "she told him", both="true") == "he told her"  # one swap, not two passes
    assert one("gender", "he told her", source="female", target="male") == "he told him"  # HELM: her -> him


def test_person_names_change_race_keep_gender_and_persist():
    out = one("person_name", "Adam met Amanda. ADAM left.")
    first, second, third = out.split()[0], out.split()[2].rstrip("."), out.split()[3]
    names = texts.person_names()
    assert first.lower() in names["race"]["black_american"] & names["gender"]["male"]
    assert second.lower() in names["race"]["black_american"] & names["gender"]["female"]
    assert third == first.upper()  # the same substitute for the same name, in its case


def test_dialect_from_a_mapping_file_longest_phrase_first():
    assert one("dialect", "I am going to go with nothing") == "I am gonna go wit nothin"


def test_variants_are_tagged_cleared_and_unchanged_ones_dropped():
    p = prediction("q1", output="Paris", confidence=0.9, latency_s=1.0, produced_at_s=1.8e9)
    p.input = "He is in Paris"
    p.references[:] = ["He is"]
    rows, unchanged = pt.perturb([p], pt.build([pt.Spec("gender"), pt.Spec("lowercase"), pt.Spec("expansion")]))
    assert unchanged == 1  # nothing to expand
    gender, lower = rows
    assert gender.id == "q1~gender" and gender.perturbation.original_id == "q1"
    assert gender.perturbation.family == pb.PERTURBATION_FAMILY_FAIRNESS and gender.input == "She is in Paris"
    assert list(gender.references) == ["She is"]  # HELM perturbs references for gender
    assert list(lower.references) == ["He is"] and lower.perturbation.family == pb.PERTURBATION_FAMILY_ROBUSTNESS
    assert not gender.output and not gender.HasField("confidence") and not gender.HasField("timing")
    assert gender.scenario == p.scenario and gender.task == p.task
    with_seed, _ = pt.perturb([p], pt.build([pt.Spec("typos", {"prob": "0.5"})]), seed=7)
    assert with_seed[0].input == one("typos", p.input, "7q1", prob="0.5")  # Random(str(seed) + id)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (pt.Spec("synonym"), "perturbations[0].name"),
        (pt.Spec("typos", {"prob": "1.5"}), "perturbations[0].options['prob']"),
        (pt.Spec("typos", {"p": "0.1"}), "perturbations[0].options['p']"),
        (pt.Spec("dialect"), "perturbations[0].word_mapping"),
        (pt.Spec("gender", {"target": "male"}), "perturbations[0].options['target']"),
    ],
)
def test_bad_specs_name_the_field(spec, field):
    with pytest.raises(InvalidArgument) as exc:
        pt.build([spec])
    assert field in [v.field for v in exc.value.violations]


def test_rpc_gives_the_library_result_and_validates(client):
    p = prediction("q1")
    p.input = "He met Adam"
    spec = es.PerturbationSpec(name="dialect", word_mapping={"met": es.WordAlternatives(words=["seen"])})
    reply = client.perturb([p], [es.PerturbationSpec(name="gender"), spec], include_originals=True)
    assert [r.id for r in reply.predictions] == ["q1", "q1~gender", "q1~dialect"]
    assert reply.predictions[2].input == "He seen Adam"
    with pytest.raises(InvalidPredictions) as exc:
        client.perturb([p], [es.PerturbationSpec(name="typos", options={"prob": "x"})])
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "perturbations[0].options['prob']" in dict(exc.value.violations)


def test_cli_writes_variants_ready_to_submit(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    p = prediction("q1", output="Paris")
    p.input = "Is it going to rain with him?"
    src.write_text(json_format.MessageToJson(p, indent=None) + "\n")
    result = CliRunner().invoke(main, ["perturb", str(src), str(out), "--with", f"lowercase,dialect:mapping={EXAMPLE}"])
    assert result.exit_code == 0, result.output
    rows = [json_format.Parse(line, pb.Prediction()) for line in out.read_text().splitlines()]
    assert [r.id for r in rows] == ["q1", "q1~lowercase", "q1~dialect"]
    assert rows[2].input == "Is it gonna rain wit him?"
    bad = CliRunner().invoke(main, ["perturb", str(src), str(out), "--with", "typos:prob=2"])
    assert bad.exit_code == 2 and "--with[0].options['prob']" in bad.output


def test_a_ranking_variant_perturbs_the_query_and_keeps_candidates_and_judgments(tmp_path):
    p = prediction("q1", task=pb.TASK_RANKING, output="", references=[], produced_at_s=1.8e9)
    p.input = "How do I reset my password"
    p.ranking.documents.add(id="d1", score=2.0, relevance=1, retriever_rank=1)
    p.ranking.documents.add(id="d2", model_output="No", logprob=-0.2, relevance=0)
    p.ranking.order.extend(["d1", "d2"])
    p.ranking.form = pb.RANKING_FORM_ORDER
    (lower,), _ = pt.perturb([p], pt.build([pt.Spec("lowercase")]))
    assert lower.id == "q1~lowercase" and lower.input == "how do i reset my password"
    assert lower.task == pb.TASK_RANKING and lower.perturbation.original_id == "q1"
    assert [d.id for d in lower.ranking.documents] == ["d1", "d2"]
    assert [d.relevance for d in lower.ranking.documents] == [1, 0] and lower.ranking.documents[0].retriever_rank == 1
    assert not lower.ranking.order and lower.ranking.form == pb.RANKING_FORM_UNSPECIFIED  # the model ranks anew
    assert not any(d.HasField("score") or d.HasField("model_output") or d.HasField("logprob")
                   for d in lower.ranking.documents)  # fmt: skip
    assert p.ranking.order == ["d1", "d2"] and p.ranking.documents[0].score == 2.0  # the original untouched
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json_format.MessageToJson(p, indent=None) + "\n")
    result = CliRunner().invoke(main, ["perturb", str(src), str(out), "--with", "typos:prob=1"])
    assert result.exit_code == 0, result.output
    rows = [json_format.Parse(line, pb.Prediction()) for line in out.read_text().splitlines()]
    assert [r.id for r in rows] == ["q1", "q1~typos"]
    assert rows[1].input == one("typos", p.input, prob="1") and rows[1].ranking.documents[0].relevance == 1
