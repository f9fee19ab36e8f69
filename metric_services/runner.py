"""The one worker loop every metric family runs in; a family only brings compute and fold.

Per read: skip what is already applied (done bit) or of a model deleted since (its tombstone,
gateway/deletion.py; apply.lua checks both again, atomically), compute partial statistics, run apply.lua
(merge once per (model, family, seq); the read's batches of one model in one script, see
metric_services/work.py), then XACK. Apply-then-ack plus an idempotent apply means
a crash anywhere counts every prediction exactly once. An entry whose compute raises on every
try is dead-lettered at once; one whose consumer keeps dying is dead-lettered by delivery count.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import redis

from holistic.families import Family, Partial, sampling
from holistic.families.registry import load_family
from holistic.families.shared_memo import SharedMemo
from holistic.families.signature import make_signature, signature_id
from holistic.process.stop_signal import stop_on_signals
from holistic.queue import envelope as env_mod
from holistic.queue.work import WorkQueue
from holistic.redis.connection import RETRYABLE
from holistic.redis.keys import Keys
from holistic.settings import Settings
from holistic.stats import segments
from holistic.stats.instances import InstanceStore, StateConflict
from holistic.stats.mergeable import Stats
from holistic.tenancy.retention import RetentionStore
from metric_services import heap, minutes
from metric_services.evaluation_out import EvaluationOut
from metric_services.fault_plan import Faults
from metric_services.middleware import Middleware
from metric_services.middleware.faults import FaultInjection
from metric_services.middleware.logs import Logs
from metric_services.middleware.prometheus import Prometheus
from metric_services.read_pace import ReadPace
from metric_services.work import Work, apply_args, coalesce

log = logging.getLogger("holistic.worker")

STATE_RETRIES = 50  # compare-and-set conflicts of per-instance state before giving up for now
CONFLICT = -1  # apply.lua: instance state changed since it was read; read again and retry
SPLIT = -2  # apply.lua: one of several batches is applied already or not pending; apply them one by one


@dataclass
class Counters:
    applied: int = 0
    skipped: int = 0
    dead_lettered: int = 0
    claimed: int = 0
    predictions: int = 0
    errors: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Applied:
    """One batch after its apply script, as the middleware sees it."""

    batch_id: str
    model: str
    seq: int
    predictions: int
    traceparent: str
    merged: bool  # False: another replica merged it first, or it is no longer pending here


_NOT_MINE = object()


class Worker:
    def __init__(
        self,
        family: Family | str,
        settings: Settings,
        client: redis.Redis,
        consumer: str | None = None,
        faults: Faults | None = None,
        middleware: list[Middleware] | None = None,
    ) -> None:
        """`middleware`: the hooks around the loop (default: Prometheus metrics, logs, and the fault
        injection of `faults` or HOLISTIC_FAULTS)."""
        self.family = load_family(family) if isinstance(family, str) else family
        prepare = getattr(self.family, "prepare", None)
        if prepare is not None:  # optional: load models at start, and fail there on a bad configuration
            prepare(settings)
        self.settings = settings
        # the share of predictions this family scores (holistic/families/sampling.py); a bad value stops it here
        self.sample_rates = sampling.rates_for(self.family.name, bool(getattr(self.family, "samples", False)))
        self.sample_rate = self.sample_rates.family
        self.keys = Keys(settings.key_prefix)
        shards = settings.worker_shards or list(range(settings.queue_shards))
        self.queues = [WorkQueue(client, self.keys, shard=n) for n in shards]
        self.queue = self.queues[0]
        self._next_block = 0
        self.pace = ReadPace(settings.read_count, settings.read_ahead_ms / 1000)
        self._behind = False  # the last read got all it asked for: a backlog, not a trickle
        self.r = client
        self.group = self.family.name
        self.consumer = consumer or f"{self.group}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        share = getattr(self.family, "share", None)
        if share is not None:  # optional: values this family's replicas compute once between them
            share(SharedMemo(client, self.keys, self.group, owner=self.consumer))
        self.faults = faults or Faults(settings.faults)
        self.middleware: list[Middleware] = (
            middleware if middleware is not None else [Prometheus(), Logs(), FaultInjection(self.faults)]
        )
        # gen_ai.evaluation.result events of a sample of scored predictions (HOLISTIC_OTLP_EVAL_*): opt-in
        self.evaluations = EvaluationOut.of(self.family, settings, self.sample_rates)
        self.counters = Counters()
        self.stopping = threading.Event()
        self._last_recover = 0.0
        self.retention = RetentionStore(settings)
        ttl, cap = settings.instance_ttl_s, settings.instance_cap
        self.segments = segments.Admission(client, self.keys, settings.segment_top_k)
        self.instances = InstanceStore(
            client, self.keys, self.group, ttl, cap, cluster=settings.redis_cluster, ttl_of=self._instance_ttl
        )
        # (model, redaction) -> this worker's signature: id, bytes
        self._signatures: dict[tuple[str, str], tuple[str, bytes]] = {}
        self._recorded: set[tuple[str, str]] = set()  # (model, redaction) whose signature this process wrote
        # per model, the newest minute an apply of this process raised its meta's NEWEST_MINUTE to: only
        # a newer one is sent (under steady traffic about once a minute)
        self._newest: dict[str, int] = {}
        # per model, its tombstone's number (None: none) when this process last looked, and since when it
        # remembers what it wrote of the model (_recorded, _newest): see _remember
        self._tombstones: dict[str, tuple[int | None, float]] = {}

    def signature_of(self, model: str, redaction: str = "") -> tuple[str, bytes]:
        """This worker's signature for `model`: its id (the statistics count predictions under it) and
        its bytes, written by apply.lua in the same script as the first statistics it applies. A batch
        the gateway redacted (its envelope's tag) counts under the signature with option "redaction"
        in a family that reads text, so profiles with and without redaction are told apart."""
        if not getattr(self.family, "reads_text", True):
            redaction = ""
        known = self._signatures.get((model, redaction))
        if known is None:
            sig = self.family.signature(model, self.settings)
            extra = {"redaction": redaction} if redaction else {}
            extra.update(self.sample_rates.signature_options())
            if extra:
                sig = make_signature(sig.family, sig.version, {**sig.options, **extra}, sig.model_sha256)
            known = (signature_id(sig), sig.SerializeToString(deterministic=True))
            if len(self._signatures) >= 10_000:
                self._signatures.clear()
                self._recorded.clear()
                self._newest.clear()
            self._signatures[(model, redaction)] = known
        return known

    # --- the loop --------------------------------------------------------------------------
    def run(self, settle_heap: bool = False) -> None:
        """settle_heap: the process is this worker's (metric_services/heap.py): freeze the heap at start and
        after the first entries (their lazy imports and models)."""
        for queue in self.queues:
            queue.ensure_group(self.group)
        streams = ", ".join(q.stream for q in self.queues)
        log.info("worker %s consuming %s as %s", self.group, streams, self.consumer)
        if settle_heap:
            heap.settle()
        settled = not settle_heap
        delay = 0.1
        while not self.stopping.is_set():
            try:
                now = time.monotonic()
                if now - self._last_recover >= self.settings.recover_interval_s:
                    self._last_recover = now
                    self.recover()
                if self.step() and not settled:
                    heap.settle()
                    settled = True
                delay = 0.1
            except (*RETRYABLE, StateConflict, redis.exceptions.NoScriptError) as exc:  # the entry stays pending
                log.warning("%s; retrying in %.1fs", exc, delay)
                self.stopping.wait(delay)
                delay = min(delay * 2, 5.0)
        log.info("worker %s stopped: %s", self.consumer, self.counters)
        if self.evaluations is not None:
            self.evaluations.close()

    def install_signal_handlers(self) -> None:
        stop_on_signals(self.stopping)

    def step(self, block_ms: int | None = None) -> int:
        """Read and process new entries once; returns how many were handled.

        A read claims what this replica expects to finish within read_ahead_ms (metric_services/read_pace.py),
        so its siblings get the rest of a backlog.

        With several shards, each is read without blocking; only when all are empty does the worker
        block, on one shard in turn, for a fraction of block_ms (a cluster forbids one XREADGROUP
        over streams in different slots)."""
        block = self.settings.block_ms if block_ms is None else block_ms
        count = self.pace.count()
        if len(self.queues) == 1:
            return self._read(self.queue, count, block)
        handled = sum(self._read(q, count, None) for q in self.queues)
        if handled == 0:
            queue = self.queues[self._next_block % len(self.queues)]
            self._next_block += 1
            handled = self._read(queue, count, max(1, block // len(self.queues)))
        return handled

    def _read(self, queue: WorkQueue, count: int, block: int | None) -> int:
        try:
            entries = queue.read(self.group, self.consumer, count, block)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            queue.ensure_group(self.group)  # the stream was deleted (or never existed): start over
            entries = queue.read(self.group, self.consumer, count, block)
        linger = self.settings.read_linger_ms
        behind, self._behind = self._behind, len(entries) >= count
        if (
            block is not None
            and entries
            and len(entries) < count
            and not behind
            and linger > 0
            and not self.stopping.wait(linger / 1000)
        ):
            # caught up: batches trickle in; the next ones within the linger share this read's apply
            # (blocking reads only: a step's pass over several shards does not linger on each). The
            # read that ends a backlog does not wait: what is left of it is applied at once.
            entries += queue.read(self.group, self.consumer, count - len(entries), None)
        if entries:
            started = time.process_time()  # CPU, not wall: a busy machine or Redis round trips do not shrink reads
            self.process(entries, queue)
            self.pace.observe(len(entries), time.process_time() - started)
        return len(entries)

    def recover(self) -> int:
        """Claim entries idle past claim_idle_ms, one at a time; dead-letter the hopeless."""
        return sum(self._recover(queue) for queue in self.queues)

    def _recover(self, queue: WorkQueue) -> int:
        handled = 0
        idle = self.settings.claim_idle_ms
        try:
            pending = queue.idle_pending(self.group, idle)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            queue.ensure_group(self.group)
            return 0
        for p in pending:
            if self.stopping.is_set():
                break
            if p.deliveries >= self.settings.max_deliveries:
                if self._settled(queue, p.id):  # applied, its consumer killed before the ack: not poison
                    queue.ack(self.group, [p.id])
                    continue
                reason = f"delivered {p.deliveries} times without an ack (consumer crashed each time)"
                if queue.deadletter(self.group, p.id, p.deliveries, reason):
                    self.counters.dead_lettered += 1
                    for m in self.middleware:
                        m.after_dead_letter(self, p.id, reason)
                continue
            claimed = queue.claim(self.group, self.consumer, idle, p.id)
            if claimed is None:
                continue
            self.counters.claimed += 1
            for m in self.middleware:
                m.after_claim(self, claimed[0])
            handled += 1
            entry_id, fields = claimed
            if not fields:  # trimmed or deleted: nothing to apply
                queue.ack(self.group, [entry_id])
                continue
            self.process([(entry_id, fields)], queue)
        return handled

    def _settled(self, queue: WorkQueue, entry_id: str) -> bool:
        """Nothing is left to do for the entry: gone, another family's, or its done bit is set."""
        fields = queue.entry(entry_id)
        if not fields:
            return True
        try:
            e = env_mod.parse(entry_id, fields)
        except env_mod.BadEntry:
            return False
        if e.is_for(self.group) is False:
            return True
        through = self.r.get(self.keys.deleted(e.model))
        if through is not None and e.seq <= int(through):  # the model was deleted since
            return True
        return bool(self.r.getbit(self.keys.done(e.model, self.group), e.seq))

    # --- one read ---------------------------------------------------------------------------
    def process(self, entries: list[tuple[str, dict[bytes, bytes]]], queue: WorkQueue | None = None) -> None:
        queue = queue or self.queue
        parsed: list[tuple[str, env_mod.Entry]] = []
        done_ids: list[str] = []
        for entry_id, fields in entries:
            try:
                parsed.append((entry_id, env_mod.parse(entry_id, fields)))
            except env_mod.BadEntry as exc:
                self._give_up(queue, entry_id, f"unreadable entry: {exc}")
        deleted: dict[str, int | None] = {}  # per model, its tombstone's number (None: none)
        if parsed:
            pipe = self.r.pipeline(transaction=False)
            for _, e in parsed:
                pipe.getbit(self.keys.done(e.model, self.group), e.seq)
            models = list(dict.fromkeys(e.model for _, e in parsed))
            for model in models:
                pipe.get(self.keys.deleted(model))
            replies = pipe.execute()
            bits = replies[: len(parsed)]
            for model, through in zip(models, replies[len(parsed) :], strict=True):
                deleted[model] = None if through is None else int(through)
                self._remember(model, deleted[model])
        work: list[Work] = []
        skipped = 0
        seen: set[tuple[str, int]] = set()
        for (entry_id, e), bit in zip(parsed, bits if parsed else [], strict=True):
            if e.is_for(self.group) is False:  # another family's, known without decoding it
                done_ids.append(entry_id)
                continue
            # applied before, a re-added copy in this read, or of a model deleted since it was accepted
            through = deleted[e.model]
            if bit or (e.model, e.seq) in seen or (through is not None and e.seq <= through):
                done_ids.append(entry_id)
                skipped += 1
                continue
            seen.add((e.model, e.seq))
            item = self._compute(queue, entry_id, e)
            if item is _NOT_MINE:
                done_ids.append(entry_id)
            elif isinstance(item, Work):
                work.append(item)
        if skipped:
            self.counters.skipped += skipped
            for m in self.middleware:
                m.after_skip(self, skipped)
        batch_ids = [w.batch_id for w in work]
        for m in self.middleware:
            m.before_apply(self, batch_ids)
        if work:
            started = time.perf_counter()
            results = self._apply(coalesce(work, self.settings.apply_max_predictions))
            seconds = time.perf_counter() - started
            outcomes: list[Applied] = []
            for w in work:
                merged = bool(results[id(w)])
                if merged and self.evaluations is not None:  # once per prediction: only the apply that merged
                    self.evaluations.offer(w.evaluations)
                if merged:
                    self._recorded.add((w.entry.model, w.redaction))
                    if w.per_minute:
                        newest = max(w.per_minute)
                        self._newest[w.entry.model] = max(newest, self._newest.get(w.entry.model, newest))
                    self.counters.applied += 1
                    self.counters.predictions += w.n
                else:  # another replica applied it since our GETBIT, or it is no longer pending here
                    self.counters.skipped += 1
                outcomes.append(Applied(w.batch_id, w.entry.model, w.entry.seq, w.n, w.traceparent, merged))
            for m in self.middleware:
                m.after_apply(self, outcomes, seconds)
        for m in self.middleware:
            m.before_ack(self, batch_ids)
        queue.ack(self.group, done_ids + [w.entry_id for w in work])

    def _remember(self, model: str, through: int | None) -> None:
        """Forget what this process wrote of `model` (its signature, its newest minute: they were deleted with
        it) when its tombstone changed since the last look, or, in case a deletion's tombstone came and
        expired unseen, after half a tombstone's lifetime."""
        now = time.monotonic()
        known = self._tombstones.get(model)
        if known is not None and known[0] == through and now - known[1] < self.settings.deletion_tombstone_s / 2:
            return
        if known is not None:
            self._recorded = {k for k in self._recorded if k[0] != model}
            self._newest.pop(model, None)
            self.segments.forget(model)
        self._tombstones[model] = (through, now)

    def _compute(self, queue: WorkQueue, entry_id: str, e: env_mod.Entry) -> Work | object | None:
        """The batch's partial statistics; _NOT_MINE for another family's; None if dead-lettered."""
        last: Exception | None = None
        for _ in range(self.settings.max_failures):
            try:
                envelope = e.envelope()
                if e.families is None and envelope.families and self.group not in envelope.families:
                    return _NOT_MINE  # an entry from before the `f` field
                started = time.perf_counter()
                admit = self.segments.admitter(e.model)
                by_minute, partial = sampling.compute(
                    self.family, envelope, self.settings, self.sample_rates,
                    compute=lambda part, st, admit=admit: segments.compute(self.family, part, st, admit),
                )  # fmt: skip
                for m in self.middleware:
                    m.after_compute(self, time.perf_counter() - started)
                accept_s = envelope.accept_time.seconds + envelope.accept_time.nanos * 1e-9
                n = len(envelope.predictions)
                stream = "" if self.settings.redis_cluster else queue.stream
                per_minute = minutes.per_minute(e.payload, envelope, accept_s)
                return Work(
                    entry_id, e, envelope.batch_id, n, by_minute, partial, accept_s, envelope.traceparent, stream,
                    per_minute, redaction=envelope.redaction,
                    evaluations=self.evaluations.records(envelope, e.model, accept_s) if self.evaluations else [],
                )  # fmt: skip
            except (redis.ConnectionError, redis.TimeoutError):  # Redis (segment admission), not the batch: the
                raise  # entry stays pending and the loop retries
            except Exception as exc:  # a family bug or a poison batch: retried, then dead-lettered
                last = exc
        name = type(last).__name__
        self.counters.errors[name] = self.counters.errors.get(name, 0) + 1
        self._give_up(queue, entry_id, f"{self.group} failed {self.settings.max_failures} times: {name}: {last}")
        return None

    def _give_up(self, queue: WorkQueue, entry_id: str, reason: str) -> None:
        if queue.deadletter(self.group, entry_id, 1, reason):
            self.counters.dead_lettered += 1
            for m in self.middleware:
                m.after_dead_letter(self, entry_id, reason)

    def _apply(self, applies: list[Work]) -> dict[int, int]:
        """Run every apply; id(batch) -> 1 merged, 0 not (applied before, or no longer pending here).
        An apply of several batches that finds one of them applied already (-2) writes nothing: its
        batches are applied one by one."""
        results: dict[int, int] = {}
        plain = [w for w in applies if w.partial is None]
        if self.settings.redis_cluster:  # a cluster pipeline cannot run scripts: one call each
            replies = []
            for w in plain:
                keys, args = self._apply_args(w, w.by_minute)
                replies.append(self.queue.scripts.apply(keys=keys, args=args))
        else:
            replies = self._apply_pipelined(plain)
        for w, reply in zip(plain, replies, strict=True):
            results[id(w)] = int(reply)
        for w in applies:  # one at a time: a batch's state reads must see the batch before it
            if w.partial is not None:
                results[id(w)] = self._apply_with_instances(w, w.partial)
        out: dict[int, int] = {}
        for w in applies:
            if results[id(w)] == SPLIT:
                out.update(self._apply(w.members))
            else:
                out.update((id(b), results[id(w)]) for b in w.batches)
        return out

    def _apply_pipelined(self, plain: list[Work]) -> list[Any]:
        """One round trip for the batches without instance state: EVALSHA itself, not the Script object,
        whose pipeline first asks SCRIPT EXISTS (a round trip of its own). A Redis that does not have
        the script (restarted, or flushed) answers NOSCRIPT: load it and send them once more (whatever
        did run is not merged twice: the done bit)."""
        if not plain:
            return []
        script = self.queue.scripts.apply
        calls = [self._apply_args(w, w.by_minute) for w in plain]

        def pipeline() -> redis.client.Pipeline:
            pipe = self.r.pipeline(transaction=False)
            for keys, args in calls:
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            return pipe

        try:
            return pipeline().execute()
        except redis.exceptions.NoScriptError:
            self.r.script_load(script.script)
            return pipeline().execute()

    def _apply_with_instances(self, w: Work, partial: Partial) -> int:
        """Read the touched instances, apply with compare-and-set; re-read and retry on a conflict."""
        for attempt in range(STATE_RETRIES):
            plan = self.instances.plan(w.entry.model, partial.spec, partial.rows, None, partial.cells)
            by_minute: dict[int, Stats] = {m: Stats().merge(st) for m, st in w.by_minute.items()}
            for b in w.batches:  # late rows are counted per batch, at its accept time
                self.instances.late(b.partial.rows if b.partial else [], b.accept_s, by_minute)
            for minute, st in plan.by_minute.items():
                by_minute.setdefault(minute, Stats()).merge(st)
            keys, args = self._apply_args(w, by_minute, plan.hashes)
            result = int(self.queue.scripts.apply(keys=keys, args=args))
            if result != CONFLICT:
                return result
            self.stopping.wait(0.001 * random.random() * (attempt + 1))
        raise StateConflict(f"instance state of {w.batch_id} kept changing under {STATE_RETRIES} applies")

    def _apply_args(
        self,
        w: Work,
        by_minute: dict[int, Stats] | None = None,
        hashes: dict[str, tuple[int, list[Any]]] | None = None,
    ) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV of apply.lua for w (metric_services/work.py), with this worker's signature
        until one of its applies has written it."""
        model = w.entry.model
        signature = self.signature_of(model, w.redaction)
        recorded = (model, w.redaction) in self._recorded
        newest = max(w.per_minute) if w.per_minute else None
        if newest is not None and newest <= self._newest.get(model, newest - 1):
            newest = None  # an apply of this process raised it that far already
        return apply_args(
            w, self.keys, self.group, self.settings, signature, not recorded, by_minute, hashes, newest,
            self.retention.of_model(model),
        )  # fmt: skip

    def _instance_ttl(self, model: str) -> int:
        """How long the model's per-instance state (raw text) stays: its tenant's raw-text retention, at most
        HOLISTIC_INSTANCE_TTL_S."""
        raw = self.retention.of_model(model).raw_text_s
        return self.settings.instance_ttl_s if raw is None else min(raw, self.settings.instance_ttl_s)


def run_worker(family: str | Family, settings: Settings, client: redis.Redis) -> Worker:
    worker = Worker(family, settings, client)
    worker.install_signal_handlers()
    worker.run(settle_heap=True)
    return worker
