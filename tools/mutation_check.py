"""Plant known bugs in the guarantee paths, one at a time, and check that the related tests fail.

Each mutant is one textual edit (it must match exactly once) applied to a temporary copy of the
working tree; the tests named for it run there with this checkout's virtual environment. A mutant
the tests do not fail on "survived": a guarantee whose tests cannot see it break. Run on demand
(minutes; not in CI):

    .venv/bin/python tools/mutation_check.py            # every mutant
    .venv/bin/python tools/mutation_check.py apply-done-bit ingest-raw-digest   # some
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", ".build", ".holistic", "__pycache__", ".hypothesis", ".*_cache"
)

WORKQUEUE_TESTS = ["tests/holistic/test_workqueue.py"]
DONE_BIT_TESTS = ["tests/metric_services/test_done_bit.py", *WORKQUEUE_TESTS]
SUBMIT_TESTS = ["tests/gateway/test_submit.py"]
CLUSTER_TESTS = ["tests/test_cluster.py"]  # groups.lua and ingest.lua run only on a cluster
VALIDATION_TESTS = ["tests/gateway/test_validation.py"]
COLUMN_TESTS = ["tests/gateway/test_columns.py"]
PROOF_TESTS = ["tests/gateway/test_wire_proof.py"]
PROOF = "gateway/_wireproof.c"
KILL_TEST = "tests/metric_services/test_kill_while_behind.py"
COALESCE_TESTS = ["tests/metric_services/test_coalesce.py"]
MEMO_TESTS = ["tests/holistic/test_shared_memo.py"]
MODEL_CAP_TESTS = ["tests/gateway/test_request_bounds.py"]
LIST_MODELS_TESTS = ["tests/gateway/test_read_bounds.py", "tests/gateway/test_list_models_pages.py"]
DELETE_TESTS = ["tests/gateway/test_delete_model.py"]
JSONLINE = "clients/python/holistic_client/_jsonline.c"
JSONLINE_TESTS = ["tests/clients/test_json_wire.py", "tests/clients/test_prediction_json.py"]
MINUTES = "metric_services/_minutes.c"
MINUTES_TESTS = ["tests/holistic/test_minutes.py"]
ENCODER_TESTS = [
    "tests/metric_services/summarization/test_encoder.py",
    "tests/metric_services/summarization/test_pipeline.py",
]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: list[str]
    why: str


MUTANTS = [
    Mutant("apply-done-bit", "holistic/redis/lua/apply.lua",
           "  if redis.call('GETBIT', KEYS[1], seq) == 1 then return not_now end\n", "",
           DONE_BIT_TESTS, "apply.lua merges a (model, family, seq) it already merged"),
    Mutant("apply-no-setbit", "holistic/redis/lua/apply.lua", "redis.call('SETBIT', KEYS[1], seq, 1)", "",
           DONE_BIT_TESTS, "apply.lua never records that it merged"),
    Mutant("apply-no-pending-check", "holistic/redis/lua/apply.lua",
           "if pending.err or #pending == 0 then return not_now end", "",
           WORKQUEUE_TESTS, "an entry read from a Redis that died is applied to the next one"),
    Mutant("apply-no-present-condition", "holistic/redis/lua/apply.lua",
           "    if op == '=' then\n      b.fields", "    if false then\n      b.fields",
           ["tests/metric_services/test_done_bit.py"], "a replica overwrites instance state it read stale"),
    Mutant("apply-no-absent-condition", "holistic/redis/lua/apply.lua",
           "    elseif op == '!' or op == 'n' then\n      b.fields", "    elseif false then\n      b.fields",
           ["tests/metric_services/test_done_bit.py"], "two replicas both create one instance"),
    Mutant("apply-new-not-checked-absent", "holistic/redis/lua/apply.lua", "    elseif op == '!' or op == 'n' then",
           "    elseif op == '!' then", ["tests/metric_services/test_done_bit.py", "tests/holistic/test_instances.py"],
           "a new instance's set overwrites the rival's that was created since the read"),
    Mutant("apply-field-written-twice", "holistic/redis/lua/apply.lua",
           "if b.twice then return", "if false then return",
           ["tests/metric_services/test_done_bit.py"], "a block writing a field twice is applied, wrongly summed"),
    Mutant("apply-hist-read-skipped", "holistic/redis/lua/apply.lua",
           "      r = r + 1\n      hist_add_bins(h[1], ARGV[o + 1], got[r], ARGV[o + 2], nil",
           "      hist_add_bins(h[1], ARGV[o + 1], got[r], ARGV[o + 2], nil",
           ["tests/holistic/test_hist_lines.py", "tests/holistic/test_stats.py"],
           "the fields after a histogram in a hash read the value of the field before them"),
    Mutant("apply-float-read-skipped", "holistic/redis/lua/apply.lua",
           "    elseif op == 'f' then\n      r = r + 1\n", "    elseif op == 'f' then\n",
           ["tests/metric_services/test_done_bit.py"], "a float sum reads another field's value"),
    Mutant("classifier-truncated-per-text", "metric_services/shared/classified.py",
           "sum(1 for row in where if row >= 0 and truncated[row]) if truncated.any() else 0",
           "int(truncated.sum())", ["tests/metric_services/test_toxicity.py"],
           "a truncated output repeated in a batch is counted once"),
    Mutant("classifier-copies-misread", "metric_services/shared/classified.py", "rows[i] = probs[row]",
           "rows[i] = probs[min(row, 1)]", ["tests/metric_services/test_toxicity.py"],
           "the outputs of a batch get another text's scores"),
    Mutant("apply-no-day-condition", "holistic/redis/lua/apply.lua", "then return -1 end\n  end\n  if #b.fields",
           "then end\n  end\n  if #b.fields", ["tests/holistic/test_instances.py"],
           "a plan read before midnight creates instances after it, where a rival may create them too"),
    Mutant("instance-absent-not-yesterday", "holistic/stats/instances.py",
           "neighbour = day - 1 if into_day < CLOCK_STEP_S else", "neighbour = None if into_day < CLOCK_STEP_S else",
           ["tests/holistic/test_instances.py"],
           "just after midnight, a rival whose clock is still yesterday creates an instance a second time"),
    Mutant("instance-absent-today-only", "holistic/stats/instances.py", "also = [] if neighbour is None else",
           "also = [] if True else", ["tests/holistic/test_instances.py"],
           "near midnight, a rival on the other side of it creates an instance twice"),
    Mutant("instance-day-of-our-clock", "holistic/stats/instances.py",
           "now = int(seconds) + int(micros) / 1e6 + self.offset_s", "now = time.time() + self.offset_s",
           ["tests/holistic/test_instances.py"],
           "the day (and so the hash a new instance goes to) is this worker's clock's, not Redis's"),
    Mutant("instance-sums-square-sign", "holistic/stats/instances.py", "acc[2] += sign * v * v", "acc[2] += v * v",
           ["tests/holistic/test_instances.py"],
           "a changed instance's old value is added to the sum of squares instead of taken back"),
    Mutant("instance-sums-new-squares", "holistic/stats/instances.py", "                    acc[2] += v * v\n",
           "                    acc[2] += v\n", ["tests/holistic/test_instances.py"],
           "a new instance's value, not its square, is added to the sum of squares"),
    Mutant("instance-sums-kept", "holistic/stats/instances.py", "        self.by_minute.clear()\n", "",
           ["tests/holistic/test_instances.py"], "an instance's contribution is spread into the statistics twice"),
    Mutant("instance-late-shortcut", "holistic/stats/instances.py", "if first * 60 >= accept_s - self.ttl_s:",
           "if first * 60 >= accept_s - 2 * self.ttl_s:", ["tests/holistic/test_instances.py"],
           "rows produced between one and two TTLs before their batch are not counted late"),
    Mutant("worker-heap-settled-once", "metric_services/runner.py", "                    settled = True\n",
           "                    pass\n", ["tests/metric_services/test_heap.py"],
           "a worker freezes its heap after every read, not once after its first entries"),
    Mutant("bleu-matches-unclipped", "metric_services/shared/generation_metrics.py",
           "numerator += c if c < r else r", "numerator += c",
           ["tests/metric_services/test_generation_metrics.py"],
           "BLEU counts an output's repeated n-gram more times than the reference has it (nltk clips)"),
    Mutant("plain-text-split-words", "metric_services/shared/generation_metrics.py",
           "if _PLAIN.match(text) and not _SPLIT_WORDS.search(text):", "if _PLAIN.match(text):",
           ["tests/metric_services/test_generation_metrics.py"],
           "plain text with Treebank's split words (cannot, gonna, ...) is split as nltk does not split it"),
    Mutant("worst-case-other-slot-prefix", "metric_services/shared/worst_case.py",
           "            append(new_row(Row, (instance, prefix + slot, value, minute)))\n",
           "            append(new_row(Row, (instance, prefix + ORIGINAL, value, minute)))\n",
           ["tests/metric_services/test_robustness_fairness.py", "tests/test_helm_conformance.py"],
           "a variant's other metrics are written into the original's slots (their worst case and orig change)"),
    Mutant("worst-case-task-count-dropped", "metric_services/shared/worst_case.py",
           '        st.incr(key(scn, f"{TASK}{task}"), n)\n', "",
           ["tests/metric_services/test_robustness_fairness.py", "tests/test_helm_conformance.py"],
           "the rows per task are not counted: a scenario's main metric falls back to the default task's"),
    Mutant("worst-case-slot-table-shared", "metric_services/shared/worst_case.py",
           "    return key(scn, metric, \"worst\"), key(scn, metric, \"orig\"), {}\n",
           "    return key(scn, metric, \"worst\"), key(scn, metric, \"orig\"), _SHARED\n\n\n_SHARED: dict = {}\n",
           ["tests/metric_services/test_robustness_fairness.py", "tests/test_helm_conformance.py"],
           "one slot table for every (scenario, metric): a slot's fields are another scenario's"),
    Mutant("bias-own-texts-uncounted", "metric_services/bias/__init__.py", "                st.incr(texts)\n",
           "                pass\n", ["tests/metric_services/test_bias.py"],
           "an unperturbed output without group words is not counted in its scenario's texts"),
    Mutant("bias-lexicon-no-hit-check", "metric_services/bias/lexicon.py",
           "    if index.keys().isdisjoint(words):", "    if index.keys().isdisjoint(words[1:]):",
           ["tests/metric_services/test_bias.py"],
           "a text whose only lexicon word is its first is counted as having none"),
    Mutant("chrf-batch-matches-max", "metric_services/summarization/corpus_scores.py",
           "weights = np.minimum(counts[:-1][both], counts[1:][both])",
           "weights = np.maximum(counts[:-1][both], counts[1:][both])",
           ["tests/metric_services/summarization/test_corpus_scores.py"],
           "chrF's matched n-grams counted as the larger side's count in the one-pass path"),
    Mutant("chrf-batch-gram-past-end", "metric_services/summarization/corpus_scores.py",
           "inside = np.arange(n, m + n, dtype=np.int64) <= end_of[:m]",
           "inside = np.arange(n, m + n, dtype=np.int64) < end_of[:m]",
           ["tests/metric_services/summarization/test_corpus_scores.py"],
           "the one-pass chrF drops every text's last n-gram of each order"),
    Mutant("chrf-batch-pairs-overflow", "metric_services/summarization/corpus_scores.py",
           "if pair_shift + max(pairs - 1, 1).bit_length() + 1 > 63:",
           "if pair_shift + max(pairs - 1, 1).bit_length() + 1 > 80:",
           ["tests/metric_services/summarization/test_corpus_scores.py"],
           "pairs packed past the key's 63 bits when the alphabet is wide (keys collide or wrap)"),
    Mutant("summarization-corpus-bins-shifted", "metric_services/summarization/scoring.py",
           'corpus_bin(group, f"b{k}") for k in range(corpus_scores.BLEU_WIDTH)',
           'corpus_bin(group, f"b{k + 1}") for k in range(corpus_scores.BLEU_WIDTH)',
           ["tests/metric_services/summarization/test_family.py"],
           "each BLEU statistic counted in the next one's corpus bin"),
    Mutant("summarization-rouge-parts-swapped", "metric_services/summarization/scoring.py",
           "for part_fields, value in zip(fields, s, strict=True):",
           "for part_fields, value in zip(fields, s[::-1], strict=True):",
           ["tests/metric_services/summarization/test_family.py"],
           "ROUGE's precision kept as its F and its F as its precision"),
    Mutant("bias-derive-shortcut-too-wide", "metric_services/bias/counterfactual.py",
           "if len(slots) == 1 and ORIGINAL in slots:", "if ORIGINAL in slots:",
           ["tests/metric_services/test_bias.py"],
           "an original with variants is taken for an original alone: no counterfactual gap"),
    Mutant("instance-one-slot-encoding", "holistic/stats/instances.py",
           'return f"{self.minute};{s}={v!r}"', 'return f"{self.minute};{s}={v:.6g}"',
           ["tests/holistic/test_instances.py"],
           "a one-slot state keeps its value to 6 digits (a later read decodes another value)"),
    Mutant("backlog-end-lingers", "metric_services/runner.py", "            and not behind\n", "",
           ["tests/metric_services/test_coalesce.py"], "the last read of a backlog waits the linger for nothing"),
    Mutant("coalesced-split-ignored", "metric_services/runner.py", "if results[id(w)] == SPLIT:", "if False:",
           COALESCE_TESTS, "batches applied together are counted applied when the script refused them"),
    Mutant("coalesced-first-bit-only", "holistic/redis/lua/apply.lua",
           "for _, seq in ipairs(seqs) do\n  if redis.call('GETBIT'",
           "for _, seq in ipairs({seqs[1]}) do\n  if redis.call('GETBIT'",
           COALESCE_TESTS, "batches applied together are merged again when one of them was applied meanwhile"),
    Mutant("coalesced-first-setbit-only", "holistic/redis/lua/apply.lua",
           "for _, seq in ipairs(seqs) do redis.call('SETBIT'",
           "for _, seq in ipairs({seqs[1]}) do redis.call('SETBIT'",
           COALESCE_TESTS, "batches applied together leave their done bits unset but the first"),
    Mutant("ingest-no-dedupe", "holistic/redis/lua/ingest.lua", "if known[1] then", "if false then",
           CLUSTER_TESTS, "a retried batch_id gets a new sequence number (a cluster's first step)"),
    Mutant("ingest-raw-digest", "gateway/ingest.py", "hashlib.sha256(deterministic)",
           "hashlib.sha256(raw)", SUBMIT_TESTS, "idempotency compares wire bytes, not content"),
    Mutant("mark-queued-twice", "holistic/redis/lua/mark_queued.lua",
           "if state ~= 'reserved' then return 0 end\n", "",
           SUBMIT_TESTS, "a re-added batch is counted as accepted twice"),
    Mutant("submit-requeues", "holistic/redis/lua/submit.lua",
           "  if known[3] ~= 'reserved' then return", "  if false then return",
           SUBMIT_TESTS, "a retried batch already on the stream is added and counted again"),
    Mutant("submit-no-dedupe", "holistic/redis/lua/submit.lua", "ARGV[3]\nif known[1] then", "ARGV[3]\nif false then",
           SUBMIT_TESTS, "a retried batch_id gets a new sequence number"),
    Mutant("submit-other-content", "holistic/redis/lua/submit.lua",
           "  if known[2] ~= ARGV[1] then return {2, tonumber(known[1])} end\n", "",
           SUBMIT_TESTS, "other content under a used batch_id is answered as a duplicate"),
    Mutant("caps-unchecked", "holistic/redis/lua/group_caps.lua", "      if keys_room < 0 then return {name} end\n",
           "", ["tests/gateway/test_validation.py", "tests/gateway/test_wire_proof.py"],
           "a batch past the group key cap is registered"),
    Mutant("submit-header-varint", "holistic/redis/lua/submit.lua", "while x >= 128 do", "while x >= 256 do",
           SUBMIT_TESTS, "a sequence or time of 128 and more is encoded wrong in the envelope header"),
    Mutant("submit-reserved-new-time", "holistic/redis/lua/submit.lua",
           "seq, n, ms = tonumber(known[1]), known[4], known[5]",
           "seq, n = tonumber(known[1]), known[4]", SUBMIT_TESTS,
           "a batch reserved by an older gateway is queued with the retry's accept time"),
    Mutant("replay-drops-header", "holistic/redis/lua/replay.lua", "or name == 'h' ", "",
           ["tests/holistic/test_workqueue.py"], "a replayed version 2 entry loses its header"),
    Mutant("groups-reused-registers", "holistic/redis/lua/groups.lua", "  return {4, tonumber(known[1])}\n", "",
           CLUSTER_TESTS, "other content under a used batch_id registers its group tags (cluster)"),
    Mutant("groups-retry-refused", "holistic/redis/lua/groups.lua",
           "  if known[2] == ARGV[1] then return {3} end\n", "",
           CLUSTER_TESTS, "a retried batch with group tags is refused as other content (cluster)"),
    Mutant("deadletter-unconditional", "holistic/redis/lua/deadletter.lua",
           "if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end",
           "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])", WORKQUEUE_TESTS,
           "two recoverers dead-letter one entry twice"),
    Mutant("replay-keeps-dead-letter", "holistic/redis/lua/replay.lua",
           "local id = redis.call('XADD', KEYS[2], '*', unpack(out))\nredis.call('XDEL', KEYS[1], ARGV[1])",
           "local id = redis.call('XADD', KEYS[2], '*', unpack(out))", ["tests/holistic/test_dlq_cli.py",
           *WORKQUEUE_TESTS], "a replayed dead letter stays and can be replayed again"),
    Mutant("claim-acks-unapplied", "metric_services/runner.py", "            self.process([(entry_id, fields)], queue)",
           "            queue.ack(self.group, [entry_id])", [*WORKQUEUE_TESTS, KILL_TEST],
           "a claimed entry is acknowledged without being applied"),
    Mutant("deliveries-never-dead-letter", "metric_services/runner.py",
           "if p.deliveries >= self.settings.max_deliveries:", "if False:",
           [KILL_TEST], "a batch that kills every consumer is retried forever"),
    Mutant("trim-past-pending", "holistic/queue/work.py", 'needed = _s(summary["min"])', 'needed = _s(summary["max"])',
           WORKQUEUE_TESTS, "the janitor trims entries a group still has pending"),
    Mutant("confidence-excludes-one", "gateway/validation.py", "if not (0.0 <= c <= 1.0):", "if not (0.0 <= c < 1.0):",
           VALIDATION_TESTS, "a confidence of exactly 1 is refused"),
    Mutant("choice-excludes-zero", "gateway/validation.py", "not (0.0 <= prob <= 1.0)", "not (0.0 < prob <= 1.0)",
           VALIDATION_TESTS, "a choice probability of exactly 0 is refused"),
    Mutant("status-first-violation-only", "gateway/status.py", "for fv in exc.violations\n",
           "for fv in exc.violations[:1]\n", ["tests/gateway/test_fuzz.py"],
           "INVALID_ARGUMENT names only the first bad field (the fuzz oracle compares with validate)"),
    Mutant("apply-denied-at-maxmemory", "holistic/redis/lua/apply.lua", "#!lua flags=allow-oom\n", "",
           ["tests/gateway/test_memory_limit.py"], "workers cannot apply at maxmemory, so memory never frees"),
    Mutant("janitor-stops-at-maxmemory", "holistic/queue/work.py",
           "if isinstance(exc, redis.exceptions.OutOfMemoryError) and any(", "if False and any(",
           ["tests/gateway/test_memory_limit.py"], "the janitor cannot start a sweep at maxmemory: memory never frees"),
    Mutant("maxmemory-is-internal", "gateway/ingest.py", "except redis.exceptions.OutOfMemoryError as exc:",
           "except LookupError as exc:", ["tests/gateway/test_memory_limit.py"],
           "a full Redis answers INTERNAL, without RetryInfo"),
    Mutant("cap-dead-letters-applied", "metric_services/runner.py", "if self._settled(queue, p.id):", "if False:",
           WORKQUEUE_TESTS, "a batch applied but never acked is dead-lettered at the delivery cap"),
    Mutant("columns-wire-types", "gateway/columns.py", "if wire.task or wire.confidence:", "if False:",
           COLUMN_TESTS, "a number sent packed, unknown to the real parse, counts in a column"),
    Mutant("columns-not-canonical", "gateway/columns.py", "if len(deterministic) != len(raw) or ", "if ",
           COLUMN_TESTS, "a field sent twice counts twice in a column"),
    Mutant("columns-count-ids", "gateway/columns.py", "if len(set(ids)) != n or ", "if ",
           COLUMN_TESTS, "a prediction without an id, or a repeated id, is proven valid"),
    Mutant("columns-no-ttft-pairing", "gateway/columns.py", 'rules.check_timing(v, "", timing)', "pass",
           COLUMN_TESTS, "time to first token after latency is proven valid"),
    Mutant("columns-timestamp-seconds", "gateway/columns.py", "rules.MIN_PRODUCED_AT_S <= secs <= latest_s",
           "secs <= latest_s", COLUMN_TESTS, "a produced_at before 2000 (or nanos without seconds) is proven valid"),
    Mutant("columns-map-distinct-keys", "gateway/columns.py", "len(set(groups.key)) > max_entries", "False",
           COLUMN_TESTS, "a prediction with too many groups is proven valid"),
    Mutant("columns-ranking", "gateway/columns.py", "or wire.perturbation or wire.ranking:", "or wire.perturbation:",
           COLUMN_TESTS,
           "a ranking on a prediction of another task is proven valid"),
    Mutant("columns-references-bound", "gateway/columns.py", ") <= most", ") <= most * 100",
           COLUMN_TESTS, "a prediction with too many references is proven valid"),
    Mutant("columns-ttft-pairs", "gateway/columns.py", "and (fs, fn) <= (ls, ln)", "",
           COLUMN_TESTS, "time to first token after latency is proven valid when every timing has both"),
    Mutant("proof-ids-unique", PROOF, "&& set_add(&b->ids, id) != 1) return 0;", ") set_add(&b->ids, id);",
           PROOF_TESTS, "a repeated prediction id is proven valid"),
    Mutant("proof-scenario-required", PROOF, "|| !has_scenario) return 0;", "|| (0 && !has_scenario)) return 0;",
           PROOF_TESTS, "a prediction without a scenario is proven valid"),
    Mutant("proof-field-twice", PROOF, "if (seen & (1u << number) && !(REPEATED_FIELDS & (1u << number))) return 0;",
           "", PROOF_TESTS, "a field sent twice (the last wins in the real parse) is proven from its first value"),
    Mutant("proof-late-model", PROOF, "if (seen & (1u << 3)) return 0;", "", PROOF_TESTS,
           "the request's model after predictions naming another is proven valid"),
    Mutant("proof-choice-sum", PROOF, "if (choices.n && !(", "if (0 && !(", PROOF_TESTS,
           "choice probabilities that do not sum to 1 are proven valid"),
    Mutant("proof-ranking-task", PROOF, "if ((task == 6) != has_ranking)", "if (0 && (task == 6) != has_ranking)",
           PROOF_TESTS,
           "a ranking on another task, or a ranking task without one, is proven valid"),
    Mutant("proof-order-membership", PROOF, "if (set_add(&docs, order[i]) != 0) goto out;", "", PROOF_TESTS,
           "a ranking's order naming a document it does not have is proven valid"),
    Mutant("proof-relevance-integer", PROOF, "x != (double)(int64_t)x ||", "", PROOF_TESTS,
           "a fractional relevance judgment is proven valid"),
    Mutant("proof-map-sort", PROOF, "(c == 0 && a.n > b.n)", "(c == 0 && a.n < b.n)", PROOF_TESTS,
           "map entries sorted otherwise than upb sorts them are taken as canonical (a wrong content digest)"),
    Mutant("proof-explicit-default", PROOF, "if (s.n == 0 && number != 8) r.canonical = 0;", "", PROOF_TESTS,
           "an empty input sent explicitly is taken as canonical (a wrong content digest)"),
    Mutant("proof-explicit-zero", PROOF, "if (v == 0) r.canonical = 0;", "", PROOF_TESTS,
           "a duration's zero nanos sent explicitly is taken as canonical (a wrong content digest)"),
    Mutant("proof-utf8-surrogate", PROOF, "(c == 0xED && p[1] > 0x9F)", "0", PROOF_TESTS,
           "a surrogate (not UTF-8) in a text is proven, and the gateway stores what the parse refuses"),
    Mutant("proof-utf8-texts", PROOF, "if (s.n > b->max_text || !utf8(s)) return 0;",
           "if (s.n > b->max_text) return 0;", PROOF_TESTS, "an input or output that is not UTF-8 is proven"),
    Mutant("proof-set-fixed", PROOF, "if ((set->count + 1) * 2 > set->mask + 1) {", "if (0) {", PROOF_TESTS,
           "the id set does not grow: a batch of many small predictions hangs the gateway"),
    Mutant("proof-not-used", "gateway/ingest.py", "if self.settings.gateway_wire_proof else None",
           "if False else None", ["tests/gateway/test_wire_proof.py::test_the_gateway_uses_it"],
           "the gateway never uses the proof"),
    Mutant("tenant-reads-unbounded", "holistic/settings.py",
           "tenant_concurrent_reads: int = Field(default=4,", "tenant_concurrent_reads: int = Field(default=1000,",
           ["tests/gateway/test_noisy_neighbour.py"], "one tenant's reads take the gateway from another"),
    Mutant("memo-claims-everything", "holistic/families/shared_memo.py",
           "return {i for i, ok in zip(part, pipe.execute(), strict=True) if ok}",
           "pipe.execute()\n        return set(part)", MEMO_TESTS,
           "a replica computes keys a sibling claimed: the replicas embed each article twice"),
    Mutant("apply-noscript-not-loaded", "metric_services/runner.py", "            self.r.script_load(script.script)\n",
           "", ["tests/holistic/test_workqueue.py"],
           "a Redis that lost its scripts (restarted) answers NOSCRIPT to every apply again: the worker dies"),
    Mutant("memo-not-stored", "holistic/families/shared_memo.py",
           "pipe.set(value_keys[i], out[i], px=self.ttl_s * 1000)",
           "pipe.get(value_keys[i])", MEMO_TESTS, "values are computed but never stored for the siblings"),
    Mutant("memo-lease-never-lapses", "holistic/families/shared_memo.py",
           "lapsed = [i for i, h in zip(pending, held, strict=True) if not h]",
           "lapsed = []", MEMO_TESTS, "a key claimed by a dead replica is waited on until the deadline"),
    Mutant("memo-oom-keeps-claims", "holistic/families/shared_memo.py",
           "self.client.delete(*[claim_keys[i] for i in unstored])", "pass", MEMO_TESTS,
           "a replica that could not store keeps its claims: siblings wait a whole lease"),
    Mutant("memo-failed-compute-keeps-claims", "holistic/families/shared_memo.py",
           "self.client.delete(*[claim_keys[i] for i in won])", "pass", MEMO_TESTS,
           "a replica whose compute raised keeps its claims: siblings wait a whole lease"),
    Mutant("memo-not-passed", "metric_services/summarization/scoring.py", "encoder.encode(list(index), memo)",
           "encoder.encode(list(index), None)", ENCODER_TESTS, "a worker's replicas never share their embeddings"),
    Mutant("hist-never-merged", "holistic/redis/lua/apply.lua",
           "if bytes + #bins < HIST_LINES * base and chunks < MOST_CHUNKS then", "if true then",
           ["tests/holistic/test_hist_lines.py"], "a histogram grows by every apply's chunk for ever (Redis memory)"),
    Mutant("hist-always-merged", "holistic/redis/lua/apply.lua",
           "if bytes + #bins < HIST_LINES * base and chunks < MOST_CHUNKS then", "if false then",
           ["tests/holistic/test_hist_lines.py"],
           "every apply decodes and re-encodes the whole history (Redis time grows with it)"),
    Mutant("hist-no-chunk-bound", "holistic/redis/lua/apply.lua", "and chunks < MOST_CHUNKS then", "then",
           ["tests/holistic/test_hist_lines.py"], "small applies pile up hundreds of chunk fields in a hash"),
    Mutant("hist-merge-drops-new-line", "holistic/redis/lua/apply.lua",
           "  count = hist_add(merged, count, bins)\n", "", ["tests/holistic/test_hist_lines.py"],
           "the apply that merges loses its own bins"),
    Mutant("hist-chunk-overwritten", "holistic/redis/lua/apply.lua", "field .. PART .. (chunks + 1), bins",
           "field .. PART .. 1, bins", ["tests/holistic/test_hist_lines.py"],
           "each apply's chunk overwrites the one before: bins lost"),
    Mutant("hist-merge-keeps-chunks", "holistic/redis/lua/apply.lua",
           "for k = 2, #names do dels[#dels + 1] = names[k] end", "", ["tests/holistic/test_hist_lines.py"],
           "a merge leaves its chunks behind: readers count them twice"),
    Mutant("hist-reader-drops-base", "holistic/stats/mergeable.py", "bins = json.loads(base)  #", "bins = {}  #",
           ["tests/holistic/test_hist_lines.py"], "readers sum the appended lines but not the merged base"),
    Mutant("hist-reader-first-line", "holistic/stats/mergeable.py", 'if "\\n" not in text:', "if True:",
           ["tests/holistic/test_hist_lines.py"], "readers see only the merged base, not the bins appended since"),
    Mutant("hist-reader-no-cap", "holistic/stats/mergeable.py",
           "return None if cap is not None and len(bins) > cap else bins",
           "return bins", ["tests/holistic/test_hist_lines.py"],
           "a capped histogram past its cap reads as exact until its next merge"),
    Mutant("jsonline-map-sort", JSONLINE, "(a->key_n > b->key_n ? -1 : 1)", "(a->key_n > b->key_n ? 1 : -1)",
           JSONLINE_TESTS, "the client's map entries are sorted otherwise than upb's: another content id"),
    Mutant("jsonline-map-duplicates", JSONLINE, "if (i && entry_order(&entries[i - 1], e) == 0) return 0;", "",
           JSONLINE_TESTS, "a group key given twice is sent twice instead of refused as json_format refuses it"),
    Mutant("jsonline-negative-zero", JSONLINE, "if (integral && v == 0.0) v = 0.0;", "", JSONLINE_TESTS,
           "an integer -0 is sent as -0.0 where json_format reads +0.0"),
    Mutant("jsonline-presence", JSONLINE, "int always = f->repeated || f->presence;", "int always = f->repeated;",
           JSONLINE_TESTS, "an explicit confidence of 0 or correct=false is dropped: the prediction changes"),
    Mutant("jsonline-key-order", JSONLINE, "if (ordered) return put(out, seg->d, seg->n);",
           "if (ordered || 1) return put(out, seg->d, seg->n);", JSONLINE_TESTS,
           "keys out of field order give bytes out of field order: not the canonical encoding"),
    Mutant("jsonline-utf8-surrogates", JSONLINE, "hi = b == 0xED ? 0x9F : 0xBF", "hi = 0xBF", JSONLINE_TESTS,
           "a surrogate's UTF-8 bytes pass as text: the gateway refuses a line Python's decoder refuses"),
    Mutant("jsonline-lone-low-surrogate", JSONLINE, "if (cp >= 0xDC00 && cp <= 0xDFFF) return 0;", "",
           JSONLINE_TESTS, "an escaped lone surrogate is written as text json_format refuses"),
    Mutant("jsonline-duplicate-key", JSONLINE, "if (seen & (1ULL << i)) return 0;", "", JSONLINE_TESTS,
           "a field given twice (or under both its names) is sent twice"),
    Mutant("jsonline-leap-year", JSONLINE, "int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;",
           "int leap = y % 4 == 0;", JSONLINE_TESTS, "1900-02-29 is taken as a date"),
    Mutant("jsonline-trailing", JSONLINE, "if (!ok || c->p != c->end) {", "if (!ok) {", JSONLINE_TESTS,
           "text after the object is ignored where json_format refuses the line"),
    Mutant("line-data-stale", "clients/python/holistic_client/jsonl.py",
           "        if self._prediction is not None:\n            return self._prediction.SerializeToString",
           "        if False:\n            return self._prediction.SerializeToString",
           ["tests/clients/test_json_wire.py"],
           "a line's changed prediction (the demo's moved timestamps) is sent as it was read"),
    Mutant("jsonline-not-used", "clients/python/holistic_client/jsonl.py",
           "got = None if _ENCODE is None else _ENCODE(raw)", "got = None", JSONLINE_TESTS,
           "the file reader never takes the C path"),
    Mutant("packer-no-split", "holistic/redis/connection.py", 'if (b" " if isinstance(name, bytes) else " ") in name:',
           "if False:", ["tests/holistic/test_redis_conn.py"],
           "a command name with a space (CLIENT SETNAME) goes out as one word: Redis refuses it"),
    Mutant("resp-subclass-packed", "holistic/redis/_resp.c",
           "if (PyUnicode_CheckExact(a)) {", "if (PyUnicode_Check(a)) {",
           ["tests/holistic/test_redis_conn.py"], "a str subclass goes out as its text, not its __str__"),
    Mutant("resp-length-short", "holistic/redis/_resp.c", "out = put_header(out, '$', argv[i].len);",
           "out = put_header(out, '$', argv[i].len - (argv[i].len > 9));", ["tests/holistic/test_redis_conn.py"],
           "an argument of ten bytes or more is announced one byte short: Redis reads a broken command"),
    Mutant("resp-not-used", "holistic/redis/connection.py", "            if _resp_pack is not None:",
           "            if False:", ["tests/holistic/test_redis_conn.py"],
           "every command is still packed by hiredis, a bytes object per argument"),
    Mutant("sketch-key-log2", "metric_services/efficiency/__init__.py", "ceil(log(v) / _LN2 * _MULTIPLIER)",
           "ceil(math.log2(v) * _MULTIPLIER)", ["tests/metric_services/test_efficiency.py"],
           "a latency on a bin's edge lands in the next bin (log2 is not ddsketch's log(v) / log(2))"),
    Mutant("sketch-key-smallest", "metric_services/efficiency/__init__.py", "if v > _SMALLEST else None",
           "if v >= _SMALLEST else None", ["tests/metric_services/test_efficiency.py"],
           "the smallest latency the sketch keys goes to a bin where ddsketch counts it as zero"),
    Mutant("minutes-floor", MINUTES, "return (s % 60 != 0 && s < 0) ? q - 1 : q;", "return q;", MINUTES_TESTS,
           "a produced_at before 1970 is counted a minute late (C truncates where Python floors)"),
    Mutant("minutes-wire-type", MINUTES, "if (key >> 3 == 15 && wire == 2) {", "if (key >> 3 == 15) {",
           MINUTES_TESTS, "a produced_at of another wire type (unknown to protobuf) is read as a timestamp"),
    Mutant("minutes-first-wins", MINUTES, "*seconds = (int64_t)v;", "if (!*seconds) *seconds = (int64_t)v;",
           MINUTES_TESTS, "a timestamp sent twice keeps its first seconds where protobuf's merge keeps the last"),
    Mutant("minutes-not-used", "metric_services/minutes.py", "    if _counts is not None:", "    if False:",
           MINUTES_TESTS, "every worker still loops over its batches' predictions in Python"),
    Mutant("registry-rescans", "holistic/families/registry.py", "if scanned is not None and scanned[0] == state:",
           "if False:", ["tests/holistic/test_registry.py"],
           "every profile fold reads every installed distribution's metadata again (most of its CPU)"),
    Mutant("registry-path-blind", "holistic/families/registry.py", "mtime = os.stat(entry or \".\").st_mtime_ns",
           "mtime = 0", ["tests/holistic/test_registry.py"],
           "a family installed while the gateway runs is not found until a restart"),
    Mutant("submit-unindexed", "holistic/redis/lua/submit.lua", "redis.call('ZADD', KEYS[6], 0, ARGV[5])", "",
           SUBMIT_TESTS, "a new model is not in the index ListModels pages through"),
    Mutant("cluster-unindexed", "gateway/ingest.py", "await self.r.zadd(self.keys.models_index(tenant), {public: 0})",
           "pass", CLUSTER_TESTS, "a cluster's new models are not in the index ListModels pages through"),
    Mutant("model-cap-ignored", "holistic/redis/lua/submit.lua", "if models >= tonumber(ARGV[11]) and", "if false and",
           MODEL_CAP_TESTS, "a tenant creates models without end, each with its own statistics"),
    Mutant("model-cap-refuses-its-own", "holistic/redis/lua/submit.lua",
           " and redis.call('SISMEMBER', KEYS[4], ARGV[5]) == 0 then return {5", " then return {5",
           MODEL_CAP_TESTS, "a tenant at its cap cannot send to the models it has"),
    Mutant("cluster-model-cap-ignored", "gateway/ingest.py",
           "if int(count) >= self.settings.tenant_max_models and not member and not known:", "if False:",
           CLUSTER_TESTS, "a cluster's tenant creates models without end"),
    Mutant("list-models-unbounded", "gateway/model_pages.py", "size = most if page_size == 0 else min(page_size, most)",
           "size = page_size or most", LIST_MODELS_TESTS,
           "a page_size past HOLISTIC_MAX_LIST_MODELS reads that many summaries in one call"),
    Mutant("list-models-uncharged", "gateway/profiles.py", "cost=1 + min(page.size, total) // LIST_MODELS_PER_BUCKET",
           "cost=0", LIST_MODELS_TESTS, "a tenant's listings are not charged to its read budget"),
    Mutant("list-models-token-relisted", "gateway/profiles.py", 'b"(" + page.after', 'b"[" + page.after',
           LIST_MODELS_TESTS, "each page starts again with the last model of the page before"),
    Mutant("list-models-never-indexed", "gateway/profiles.py", "if indexed >= total:", "if True:",
           LIST_MODELS_TESTS, "models accepted before the index existed are never listed"),
    Mutant("apply-resurrects-deleted", "holistic/redis/lua/apply.lua",
           "if tonumber(seq) <= tonumber(deleted) then return not_now end", "",
           DELETE_TESTS, "a batch read before its model's deletion brings the model back when applied after it"),
    Mutant("worker-remembers-deleted", "metric_services/runner.py",
           "self._recorded = {k for k in self._recorded if k[0] != model}", "pass",
           DELETE_TESTS, "a re-created model's statistics have no signature: the worker thinks it wrote it"),
    Mutant("seq-restarts-after-deletion", "holistic/redis/lua/deletion.lua", "if through > 0 then", "if false then",
           DELETE_TESTS, "a deleted model's next batch shares its number (and done bit) with one read before"),
    Mutant("submit-ignores-deletion", "holistic/redis/lua/submit.lua",
           "if redis.call('EXISTS', KEYS[8]) == 1 then return {6} end", "",
           DELETE_TESTS, "a batch accepted while its model is deleted is half deleted"),
    Mutant("deletion-unlocked", "holistic/redis/lua/delete_begin.lua", "redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])",
           "", DELETE_TESTS, "a batch accepted while its model is deleted is half deleted"),
    Mutant("ingest-ignores-deletion", "holistic/redis/lua/ingest.lua",
           "if redis.call('EXISTS', KEYS[4]) == 1 then return {-1} end", "", CLUSTER_TESTS,
           "a cluster accepts a batch while its model is deleted"),
    Mutant("groups-ignore-deletion", "holistic/redis/lua/groups.lua",
           "if redis.call('EXISTS', KEYS[2]) == 1 then return {5} end", "", CLUSTER_TESTS,
           "a cluster registers the group tags of a batch it refuses while its model is deleted"),
    Mutant("cluster-keeps-late-entry", "holistic/redis/lua/mark_queued.lua", "if not state then return -1 end", "",
           CLUSTER_TESTS, "a batch numbered before its model's deletion and queued after it stays on the stream"),
    Mutant("deletion-keeps-stream-entries", "gateway/deletion.py",
           "removed[row] += int(await self.r.xdel(stream, *ids))", "pass",
           DELETE_TESTS, "a deleted model's batches stay on the work stream, raw text and all"),
]  # fmt: skip


def run(m: Mutant, python: str, timeout_s: float) -> tuple[str, float, str]:
    with tempfile.TemporaryDirectory(prefix=f"mutant-{m.name}-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(ROOT, copy, ignore=SKIP)
        target = copy / m.path
        text = target.read_text()
        if text.count(m.old) != 1:
            return "broken", 0.0, f"the edit matches {text.count(m.old)} times in {m.path}"
        target.write_text(text.replace(m.old, m.new))
        if m.path.endswith(".c"):  # the extension the tests load is the mutant's
            build = [python, "tools/build_native.py", "--force"]
            built = subprocess.run(build, cwd=copy, capture_output=True, text=True)
            if built.returncode:
                return "broken", 0.0, built.stderr[-500:]
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join(str(copy / p) for p in (".", "clients/python", "clients/web"))
        )
        started = time.monotonic()
        try:
            done = subprocess.run([python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests], cwd=copy,
                                  env=env, capture_output=True, text=True, timeout=timeout_s)  # fmt: skip
        except subprocess.TimeoutExpired:
            return "killed (timeout)", time.monotonic() - started, ""
        took = time.monotonic() - started
        last = (done.stdout.strip().splitlines() or [""])[-1]
        if done.returncode == 1:
            return "killed", took, last
        if done.returncode == 0:
            return "SURVIVED", took, last
        return "error", took, last + done.stderr[-500:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    python = str(ROOT / ".venv" / "bin" / "python")
    killed = 0
    for m in chosen:
        verdict, took, last = run(m, python, args.timeout)
        killed += verdict.startswith("killed")
        print(f"{m.name:30} {verdict:16} {took:6.1f}s  {m.why}  [{last}]", flush=True)
    print(f"score: {killed}/{len(chosen)} killed")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
