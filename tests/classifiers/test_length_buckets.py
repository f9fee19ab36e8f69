"""Sorting texts by length into runs (the transformer path's padding), and the order coming back."""

from __future__ import annotations

import numpy as np

from holistic.classifiers.export_detoxify import export_detoxify
from holistic.classifiers.model_dir import load_model_dir
from holistic.classifiers.runtime import open_classifier
from holistic.classifiers.transformer import PAD_SLACK, length_buckets


def test_runs_are_the_positions_sorted_by_length_in_batch_size_groups():
    # lengths 5 2 9 2 7 -> sorted positions 1 3 0 4 2 (ties keep arrival order)
    assert length_buckets([5, 2, 9, 2, 7], 2) == [[1, 3], [0, 4], [2]]
    assert length_buckets([5, 2, 9, 2, 7], 32) == [[1, 3, 0, 4, 2]]
    assert length_buckets([], 4) == []
    # padding: runs in arrival order pay for the longest of each; sorted runs for about their own length
    lengths = [3, 90, 4, 5, 88, 6]
    assert sum(2 * max(lengths[i : i + 2]) for i in range(0, 6, 2)) == 2 * (90 + 5 + 88)
    assert sum(len(b) * max(lengths[i] for i in b) for b in length_buckets(lengths, 2)) == 2 * (4 + 6 + 90)
    # a run closes before a text longer than 2 x its shortest + PAD_SLACK (8): 3..14 share one, 30 and
    # 88 do not join it (one run of 7 would be padded to 88: 616 positions for 150 tokens; these, 188)
    assert PAD_SLACK == 8
    assert length_buckets([3, 30, 4, 5, 88, 6, 14], 32) == [[0, 2, 3, 5, 6], [1], [4]]


def test_scores_come_back_in_the_callers_order_whatever_the_batch(tiny_bert, tmp_path):
    out = tmp_path / "bert"
    export_detoxify(tiny_bert, tiny_bert.parent, out, log=lambda s: None)
    model = load_model_dir(out)
    texts = ["word " * 40, "ok", "you are an idiot", "a b c d e f g h", "hi", "the doctor called her mother"]
    one_by_one = np.vstack([open_classifier(model, threads=1, batch_size=1).predict([t]).probs for t in texts])
    for batch_size in (1, 2, 4, 32):
        probs = open_classifier(model, threads=1, batch_size=batch_size).predict(texts).probs
        assert np.abs(probs - one_by_one).max() <= 1e-6, batch_size
    # the rows differ from each other, so a misplaced row could not pass unnoticed
    assert min(np.abs(one_by_one[i] - one_by_one[j]).max() for i in range(6) for j in range(i)) > 1e-3
