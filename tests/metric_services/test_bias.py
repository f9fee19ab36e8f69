"""Bias family: HELM's worked example, the axis combination, group toxicity rates, counterfactual gaps."""

from __future__ import annotations

import pytest

from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp
from metric_services import bias
from metric_services.bias import lexicon as bias_lexicon
from metric_services.bias.counterfactual import EMPTY, SPEC, variant_slot
from tests.factories import prediction
from tests.metric_services.test_toxicity import fold, metric

REPR_GENDER = "bias_metric:mode=representation,demographic_category=gender"
REPR_RACE = "bias_metric:mode=representation,demographic_category=race"
ASSOC_GENDER_PROF = "bias_metric:mode=associations,demographic_category=gender,target_category=profession"
ASSOC_RACE_PROF = "bias_metric:mode=associations,demographic_category=race,target_category=profession"
HELM_EXAMPLE = ["She asked her mother.", "He said she was the doctor.", "Wang, Garcia and Anderson met."]


def test_helm_worked_example_and_the_axis(settings):
    preds = [prediction(f"p{i}", output=t) for i, t in enumerate(HELM_EXAMPLE)]
    f = fold(preds, settings, bias.FAMILY)
    # Gender tokens: female she, her, mother, she = 4; male he = 1. Lists have 20 words each, so
    # P = (.8, .2) and TV = ½(|.8-.5| + |.2-.5|) = 0.3 (HELM's worked example).
    assert metric(f, REPR_GENDER).value == pytest.approx(0.3)
    # Race: wang, garcia, anderson once each over lists of 20, 16, 20: n = (.05, .0625, .05), P = (.3077,
    # .3846, .3077), TV = ½(.0256 + .0513 + .0256) = 0.0513.
    assert metric(f, REPR_RACE).value == pytest.approx(0.05128205, abs=1e-8)
    # "doctor" co-occurs with one female and one male word: counts (1, 1) -> TV 0; no race co-occurrence.
    assert metric(f, ASSOC_GENDER_PROF).value == 0.0
    assert all(m.name != ASSOC_RACE_PROF for m in f.report.metrics)  # None: absent, never 0
    (dim,) = f.dimensions
    # rescaled: 0.3/(1-1/2) = 0.6; 0.0513/(1-1/3) = 0.0769; 0/(1/2) = 0 -> axis 1 - 0.6769/3 = 0.77436
    assert dim.kind == pp.DIMENSION_KIND_BIAS and dim.score == pytest.approx(1 - (0.6 + 0.05128205 * 1.5) / 3)
    assert {m.name for m in dim.metrics} == {REPR_GENDER, REPR_RACE, ASSOC_GENDER_PROF}


def test_lexicon_scores_do_not_depend_on_batching(settings):
    preds = [prediction(f"p{i}", output=t) for i, t in enumerate(HELM_EXAMPLE * 3)]
    whole = {m.name: m.value for m in fold(preds, settings, bias.FAMILY).report.metrics}
    from holistic.families import as_partial
    from holistic.stats.mergeable import Folded, Stats
    from tests.metric_services.test_toxicity import BatchEnvelope

    total = Stats()
    for start in range(0, len(preds), 2):  # the lexicon statistics are plain: they add batch by batch
        env = BatchEnvelope(model="m", predictions=preds[start : start + 2])
        by_minute, partial = as_partial(bias.FAMILY.compute(env, settings))
        for st in by_minute.values():
            total.merge(st)
        assert partial is not None and all(row.slot == "o" for row in partial.rows)  # originals, no pair
    split = {m.name: m.value for m in bias.FAMILY.fold(Folded.from_stats(total), "m", settings).report.metrics}
    assert split == pytest.approx(whole)


def test_no_group_word_leaves_the_axis_absent(settings):
    f = fold([prediction("1", output="The invoice is attached."), prediction("2", output="")], settings, bias.FAMILY)
    (dim,) = f.dimensions
    assert not dim.HasField("score")
    assert dim.absent_reason == "no gender or race word from HELM's lists appears in the 1 non-empty outputs"
    assert f.report.skipped == 1


def test_group_counts_to_bias_matches_helm():
    assert bias_lexicon.group_counts_to_bias([0, 0], [20, 20]) is None
    assert bias_lexicon.group_counts_to_bias([3, 0], [20, 20]) == pytest.approx(0.5) == bias_lexicon.max_bias(2)
    assert bias_lexicon.tokens("Police-man's MOTHER, naïve") == ["police-man", "s", "mother", "naïve"]


def test_toxicity_rate_per_group_gap_and_worst(settings, use_table):
    use_table({"bad": [0.9, 0.1], "fine": [0.1, 0.1], "about her": [0.2, 0.8]}, labels=("toxicity", "female"),
              identity=("female",))  # fmt: skip
    preds = [
        prediction("1", output="bad", groups={"gender": "female"}),
        prediction("2", output="fine", groups={"gender": "female"}),
        prediction("3", output="fine", groups={"gender": "male"}),
        prediction("4", output="fine", groups={"gender": "male"}),
        prediction("5", output="about her", groups={"gender": "male"}),
    ]
    f = fold(preds, settings, bias.FAMILY)
    assert metric(f, "toxic_rate[gender=female]").value == 0.5  # 1 of 2
    assert metric(f, "toxic_rate[gender=male]").value == 0.0  # 0 of 3
    assert metric(f, "toxic_rate_gap[gender]").value == 0.5
    assert metric(f, "toxic_rate_worst[gender=female]").value == 0.5
    # The model's identity label: only "about her" reaches 0.5 for female, and it is not toxic.
    assert metric(f, "toxic_rate[identity=female]").value == 0.0 and metric(f, "toxic_rate[identity=female]").count == 1


def fair(pid, original, output, name="gender"):
    p = prediction(pid, output=output)
    p.perturbation.family = pb.PERTURBATION_FAMILY_FAIRNESS
    p.perturbation.name = name
    p.perturbation.original_id = original
    return p


def test_counterfactual_gap_in_one_batch(settings, use_table):
    use_table({"o1": [0.9], "o2": [0.2], "p1": [0.3], "p2": [0.4], "p3": [0.5]})
    preds = [prediction("o1", output="o1"), prediction("o2", output="o2"), fair("o1~g", "o1", "p1"),
             fair("o2~d", "o2", "p2", name="dialect"), fair("o9~g", "o9", "p3")]  # fmt: skip
    f = fold(preds, settings, bias.FAMILY)
    # |0.3 - 0.9| = 0.6 and |0.4 - 0.2| = 0.2: mean 0.4; o9 never arrives: unpaired
    assert metric(f, "counterfactual_toxicity_gap").value == pytest.approx(0.4)
    assert metric(f, "counterfactual_toxicity_gap").count == 2
    assert metric(f, "counterfactual_toxicity_gap[gender]").value == pytest.approx(0.6)
    assert metric(f, "counterfactual_toxicity_gap[dialect]").value == pytest.approx(0.2)
    assert metric(f, "counterfactual_unpaired").value == 1


def test_derive_is_pure_and_skips_unscored_halves():
    g1, g2, d1 = variant_slot("gender", "a~g"), variant_slot("gender", "a~g2"), variant_slot("dialect", "a~d")
    assert SPEC.derive("s\x1fa", {"o": 0.2}) == {}  # an original alone: nothing yet
    assert SPEC.derive("s\x1fa", {g1: 0.7, d1: 0.1}) == {"cf_unpaired": 2.0}  # no original yet
    # per original: gaps |.2-.7| = .5, |.2-.6| = .4 (gender), |.2-.1| = .1 (dialect) -> mean 1/3;
    # per name: gender (.5 + .4) / 2 = .45, dialect .1
    got = SPEC.derive("s\x1fa", {"o": 0.2, g1: 0.7, g2: 0.6, d1: 0.1})
    assert got == pytest.approx({"cf": 1.0 / 3, "cf:gender": 0.45, "cf:dialect": 0.1})
    # an empty half (EMPTY) is no gap: counted apart
    assert SPEC.derive("s\x1fa", {"o": 0.2, g1: EMPTY, d1: 0.1}) == pytest.approx(
        {"cf": 0.1, "cf:dialect": 0.1, "cf_unscored": 1.0}
    )
    assert SPEC.derive("s\x1fa", {"o": EMPTY, g1: 0.3}) == {"cf_unscored": 1.0}
    assert variant_slot("gender", "x;y=z").startswith("v:gender:") and ";" not in variant_slot("g", "x;y")


def test_hand_worked_race_association(settings):
    f = fold([prediction("1", output="Wang is a doctor. Garcia is a nurse.")], settings, bias.FAMILY)
    # Both professions co-occur with (asian 1, hispanic 1, white 0) in the one text; normalized by list
    # sizes (20, 16, 20): (.05, .0625, 0) -> P = (.4444, .5556, 0); TV = ½(.1111 + .2222 + .3333) = 1/3
    # for each word, so the mean over the two words is 1/3.
    assert metric(f, ASSOC_RACE_PROF).value == pytest.approx(1 / 3) and metric(f, ASSOC_RACE_PROF).count == 2


def test_bias_per_scenario_is_helms_run_cell(settings):
    # news: HELM's example (gender TV 0.3); qa: "He and his son." -> male only: P = (0, 1), TV 0.5;
    # a perturbed variant of a qa output (female words) counts in the model-level corpus only.
    preds = [prediction(f"p{i}", scenario="news", output=t) for i, t in enumerate(HELM_EXAMPLE)]
    preds.append(prediction("q1", scenario="qa", output="He and his son."))
    v = prediction("q1~g", scenario="qa", output="She and her daughter.")
    v.perturbation.name, v.perturbation.original_id = "gender", "q1"
    v.perturbation.family = pb.PERTURBATION_FAMILY_FAIRNESS
    preds.append(v)
    f = fold(preds, settings, bias.FAMILY)
    news = {m.name: m.value for m in f.scenarios["news"].metrics}
    qa = {m.name: m.value for m in f.scenarios["qa"].metrics}
    assert news[REPR_GENDER] == pytest.approx(0.3)
    assert news[REPR_RACE] == pytest.approx(0.05128205, abs=1e-8)
    assert qa[REPR_GENDER] == pytest.approx(0.5)
    assert REPR_RACE not in qa  # no race word: None, absent
    assert f.scenarios["qa"].count == 1  # its unperturbed non-empty outputs
    # model level, every output pooled (the axis's corpus): female 4 + she, her, daughter = 7; male
    # 1 + he, his, son = 4 (equal list sizes): P = (7/11, 4/11), TV = |7/11 - 1/2| = 3/22.
    assert metric(f, REPR_GENDER).value == pytest.approx(3 / 22, abs=1e-12)


def _counts_word_by_word(text: str, lex: bias_lexicon.Lexicon) -> tuple[dict, dict]:
    """text_counts as HELM counts: every token looked up in turn (the reference for its shortcut)."""
    groups: dict = {}
    targets: dict = {}
    for t in bias_lexicon.tokens(text):
        for d, g in lex.index.get(t, ((), ()))[0]:
            groups.setdefault(d, {}).setdefault(g, 0)
            groups[d][g] += 1
        for c, w in lex.index.get(t, ((), ()))[1]:
            targets.setdefault(c, {}).setdefault(w, 0)
            targets[c][w] += 1
    return groups, targets


@pytest.mark.parametrize(
    "text",
    [
        "She walked home.",  # the only lexicon word first
        "Walked home, she did",  # last
        "the weather was fine",  # none
        "",
        "He met the accountant; she met Wong and Soto, and he left",  # several, repeated, with a target
        "she-he accountant accountant",  # hyphenated tokens are one token (no hit) then a repeated target
    ],
)
def test_text_counts_equal_a_word_by_word_count(text):
    lex = bias_lexicon.lexicon()
    groups, targets = bias_lexicon.text_counts(text, lex)
    assert ({d: dict(c) for d, c in groups.items()}, {c: dict(w) for c, w in targets.items()}) == (
        _counts_word_by_word(text, lex)
    )
