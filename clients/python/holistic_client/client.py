"""The Python client: batching, idempotent retries on RetryInfo and UNAVAILABLE, profile reads."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import grpc
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential_jitter

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic.v1 import profile_pb2 as pp
from holistic.v1.prediction_pb2 import Prediction
from holistic_client.errors import (
    ClientError,
    InvalidPredictions,
    Unreachable,
    connect_failure,
    from_rpc_error,
    retry_delay_s,
)
from holistic_client.jsonl import Line
from holistic_client.submit_encoding import content_id, encoded, request_body, submit_method, with_batch_id

__all__ = ["Client", "ClientError", "InvalidPredictions", "RetryNotice", "SubmitReport", "Unreachable"]

WINDOWS = {
    "all": pp.WINDOW_PRESET_ALL_TIME,
    "15m": pp.WINDOW_PRESET_LAST_15_MINUTES,
    "1h": pp.WINDOW_PRESET_LAST_HOUR,
    "24h": pp.WINDOW_PRESET_LAST_DAY,
    "1d": pp.WINDOW_PRESET_LAST_DAY,
    "7d": pp.WINDOW_PRESET_LAST_WEEK,
}
_PREDICTION_PATH = re.compile(r"^predictions\[(\d+)\]")
Window = str | tuple[datetime, datetime]


def _retryable(exc: BaseException) -> bool:
    if not isinstance(exc, grpc.RpcError):
        return False
    code = exc.code()  # type: ignore[attr-defined]
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return retry_delay_s(exc) is not None  # a too-large message has no RetryInfo: not retryable
    return code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


CONNECT_TIMEOUT_S = 5.0  # a gateway that accepted the connection answers well within this


def _wait(fallback: Callable[..., float]) -> Callable[..., float]:
    """Wait as long as the server's RetryInfo asks, else exponential backoff with jitter."""

    def wait(state: object) -> float:
        exc = state.outcome.exception()  # type: ignore[attr-defined]
        delay = retry_delay_s(exc) if isinstance(exc, grpc.RpcError) else None
        return delay if delay is not None else fallback(state)

    return wait


@dataclass
class RetryNotice:
    """Told to `on_retry` before each wait: what failed, how often, and when the client gives up."""

    attempt: int  # the attempt that just failed, from 1
    max_attempts: int
    code: grpc.StatusCode
    sleep_s: float
    give_up_at: float | None  # time.time() after which no attempt starts; None: only max_attempts bounds it


@dataclass
class SubmitReport:
    accepted: int = 0
    duplicates: int = 0
    batches: int = 0
    rejected: list[tuple[int, str, str]] = field(default_factory=list)  # (line, field, reason)
    models: set[str] = field(default_factory=set)  # those with a batch accepted


class Client:
    """A channel to the gateway. Use as a context manager or call close()."""

    def __init__(
        self,
        target: str = "127.0.0.1:50051",
        token: str | None = None,
        *,
        timeout_s: float = 30.0,
        max_attempts: int = 12,
        credentials: grpc.ChannelCredentials | None = None,
        tls_ca: str | Path | None = None,
        tls_cert: str | Path | None = None,
        tls_key: str | Path | None = None,
        retry_for_s: float | None = None,
        on_retry: Callable[[RetryNotice], None] | None = None,
        wait_for_ready: bool = True,
    ) -> None:
        """TLS when `credentials` or `tls_ca` is given; mutual TLS with `tls_cert` and `tls_key` too.

        A call retries UNAVAILABLE and RetryInfo answers up to `max_attempts` times and, when
        `retry_for_s` is set, for at most that long; `on_retry` hears of each retry before its wait.
        `wait_for_ready=False`: until a call has reached the gateway once, a connection that cannot be
        made raises Unreachable at once (the address and gRPC's cause) instead of retrying: what a
        command line wants by default. Once reached, retries are as above.
        """
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
        if credentials is None and (tls_ca or tls_cert):
            credentials = tls_credentials(tls_ca, tls_cert, tls_key)
        self.channel = (
            grpc.secure_channel(target, credentials, options) if credentials else grpc.insecure_channel(target, options)
        )
        self.stub = es_grpc.EvaluationServiceStub(self.channel)
        self._submit = submit_method(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.retry_for_s = retry_for_s
        self.on_retry = on_retry
        self.target = target
        self.wait_for_ready = wait_for_ready
        self._reached = False  # a call has had an answer from the gateway

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_reachable(self) -> None:
        """Before the first call of a client that does not wait: a host that accepts the connection and
        never answers (no HTTP/2, a black hole) would hold each attempt for its whole timeout, 12 times.
        One health check bounded by CONNECT_TIMEOUT_S tells: any answer (even UNIMPLEMENTED) is a server;
        a refused connection is left to the call, which names its cause."""
        if self.wait_for_ready or self._reached:
            return
        check = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda _: b"",  # HealthCheckRequest{} (the whole server)
            response_deserializer=lambda raw: raw,
        )
        try:
            check(None, timeout=CONNECT_TIMEOUT_S)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:  # type: ignore[attr-defined]
                raise Unreachable(self.target, f"no answer within {CONNECT_TIMEOUT_S:g} s") from None
            if (unreachable := self._unreachable(err)) is not None:
                raise unreachable from None
        self._reached = True

    def _call(self, fn: Callable[..., object], request: object) -> object:
        self._check_reachable()
        deadline = None if self.retry_for_s is None else time.monotonic() + self.retry_for_s
        give_up_at = None if self.retry_for_s is None else time.time() + self.retry_for_s
        wait = _wait(wait_exponential_jitter(multiplier=0.1, max=10.0))

        def bounded_wait(state: RetryCallState) -> float:
            delay = wait(state)
            return delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic()))

        def stop(state: RetryCallState) -> bool:
            return state.attempt_number >= self.max_attempts or (deadline is not None and time.monotonic() >= deadline)

        def notify(state: RetryCallState) -> None:
            exc = state.outcome.exception()  # type: ignore[union-attr]
            if self.on_retry is not None and isinstance(exc, grpc.RpcError):
                sleep = state.next_action.sleep if state.next_action else 0.0
                self.on_retry(RetryNotice(state.attempt_number, self.max_attempts, exc.code(), sleep, give_up_at))  # type: ignore[attr-defined]

        retrying = Retrying(
            retry=retry_if_exception(lambda e: _retryable(e) and not self._unreachable(e)),
            wait=bounded_wait, stop=stop, before_sleep=notify, reraise=True,
        )  # fmt: skip
        try:
            for attempt in retrying:
                with attempt:
                    timeout = self.timeout_s
                    if deadline is not None:
                        timeout = max(0.05, min(timeout, deadline - time.monotonic()))
                    reply = fn(request, timeout=timeout, metadata=self.metadata)
                    self._reached = True
                    return reply
        except grpc.RpcError as err:
            if (unreachable := self._unreachable(err)) is not None:
                raise unreachable from None
            raise from_rpc_error(err) from None
        raise AssertionError("unreachable")

    def _unreachable(self, exc: BaseException) -> Unreachable | None:
        """What to raise for a connection never made, on a client that does not wait for the gateway."""
        if self.wait_for_ready or self._reached:
            return None
        cause = connect_failure(exc)
        return None if cause is None else Unreachable(self.target, cause)

    # --- writing -----------------------------------------------------------------------------
    def submit(
        self, predictions: Sequence[Prediction], *, batch_id: str | None = None, model: str = ""
    ) -> es.SubmitPredictionsResponse:
        """Submit one batch; retried safely, since the same batch_id and content is idempotent."""
        return self.submit_encoded(encoded(predictions), batch_id=batch_id, model=model)

    def submit_encoded(
        self, predictions: Sequence[bytes], *, batch_id: str | None = None, model: str = ""
    ) -> es.SubmitPredictionsResponse:
        """submit() for predictions given as their deterministic encodings (what Line.data holds)."""
        body = request_body(model, predictions)
        # the request's canonical bytes are the batch id's field (number 1) then the body: serialized once
        return self._call(self._submit, with_batch_id(batch_id or content_id(body), body))  # type: ignore[return-value]

    def submit_lines(
        self,
        lines: Iterable[Line],
        *,
        batch_size: int = 500,
        model: str = "",
        on_batch: Callable[[int], None] | None = None,
    ) -> SubmitReport:
        """Submit a file's lines in per-model batches; report rejected lines by number."""
        report = SubmitReport()
        pending: dict[str, list[Line]] = {}
        for line in lines:
            if line.data is None:
                report.rejected.append((line.number, "", line.error))
                if on_batch:
                    on_batch(1)
                continue
            key = line.model or model
            chunk = pending.setdefault(key, [])
            chunk.append(line)
            if len(chunk) >= batch_size:
                self._submit_chunk(pending.pop(key), model, report, on_batch)
        for chunk in pending.values():
            self._submit_chunk(chunk, model, report, on_batch)
        return report

    def _submit_chunk(
        self, chunk: list[Line], model: str, report: SubmitReport, on_batch: Callable[[int], None] | None
    ) -> None:
        lines = len(chunk)
        while chunk:
            try:
                response = self.submit_encoded([line.data for line in chunk], model=model)  # type: ignore[misc]
            except InvalidPredictions as err:
                bad: dict[int, list[tuple[str, str]]] = {}
                for path, reason in err.violations:
                    m = _PREDICTION_PATH.match(path)
                    if m is None:  # a batch-level problem: every line of the chunk is rejected
                        report.rejected.extend((line.number, path, reason) for line in chunk)
                        chunk = []
                        break
                    bad.setdefault(int(m.group(1)), []).append((path, reason))
                else:
                    if not bad:
                        raise
                    for i, problems in bad.items():
                        report.rejected.extend((chunk[i].number, p, r) for p, r in problems)
                    chunk = [line for i, line in enumerate(chunk) if i not in bad]
                continue
            report.batches += 1
            report.models.add(chunk[0].model or model)
            if response.duplicate:
                report.duplicates += response.accepted_count
            else:
                report.accepted += response.accepted_count
            break
        if on_batch:
            on_batch(lines)

    # --- reading ------------------------------------------------------------------------------
    def get_profile(self, model: str, window: Window = "all") -> pp.Profile:
        request = es.GetProfileRequest(model=model)
        _set_window(request, window)
        return self._call(self.stub.GetProfile, request).profile  # type: ignore[attr-defined]

    def compare_profiles(
        self,
        model: str,
        other_model: str = "",
        window: Window = "all",
        margin: float = 0.0,
        level: float = 0.0,
        fail_on: Sequence[str] = (),
        multiplicity: int = es.MULTIPLICITY_HOLM,
    ) -> es.CompareProfilesResponse:
        """`model` against `other_model` over one window, or (no other_model) `model`'s window against the
        window of equal length just before it: every cell tested, the p-values adjusted (Holm, or
        Benjamini-Hochberg), and the decision over `fail_on` (empty: every axis)."""
        request = es.CompareProfilesRequest(
            model=model, other_model=other_model, margin=margin, level=level, fail_on=fail_on,
            multiplicity=multiplicity,  # type: ignore[arg-type]
        )  # fmt: skip
        _set_window(request, window)
        return self._call(self.stub.CompareProfiles, request)  # type: ignore[return-value]

    def wait_applied(
        self,
        models: Iterable[str],
        timeout: float = 300.0,
        on_progress: Callable[[dict[str, int]], None] | None = None,
        poll_s: float = 0.25,
    ) -> dict[str, pp.Profile]:
        """Block until every deployed family applied all it accepted for each model (Profile.pending all
        0), so a profile read next rests on everything submitted; the all-time profiles when it returns.
        on_progress gets model -> predictions still pending (the most of any family) after each look.
        Raises TimeoutError naming what is still pending after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        left = sorted(set(models))
        done: dict[str, pp.Profile] = {}
        while True:
            waiting: dict[str, int] = {}
            for model in left:
                p = self.get_profile(model)
                most = max((f.pending_predictions for f in p.pending if f.pending_predictions or f.pending_batches),
                           default=None)  # fmt: skip
                if most is None:
                    done[model] = p
                else:
                    waiting[model] = most
            if on_progress:
                on_progress(waiting)
            if not waiting:
                return done
            if time.monotonic() >= deadline:
                what = ", ".join(f"{m}: {n:,}" for m, n in waiting.items())
                raise TimeoutError(f"after {timeout:g} s, predictions not yet applied by every family: {what}")
            left = list(waiting)
            time.sleep(min(poll_s, max(deadline - time.monotonic(), 0.0)))

    def watch_profile(self, model: str, window: Window = "all") -> Iterator[pp.Profile]:
        request = es.WatchProfileRequest(model=model)
        _set_window(request, window)
        try:
            for response in self.stub.WatchProfile(request, metadata=self.metadata):
                self._reached = True
                yield response.profile
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:  # type: ignore[attr-defined]
                return
            if (unreachable := self._unreachable(err)) is not None:
                raise unreachable from None
            raise from_rpc_error(err) from None

    def list_families(self) -> list[es.FamilyStatus]:
        """The deployment's and the gateway's metric families, in name order, each with its backlog."""
        return list(self._call(self.stub.ListFamilies, es.ListFamiliesRequest()).families)  # type: ignore[attr-defined]

    def list_models(self, page_size: int = 0) -> list[pp.ModelSummary]:
        """Every model of the caller's tenant, in name order: all of iter_models's pages."""
        return list(self.iter_models(page_size))

    def iter_models(self, page_size: int = 0) -> Iterator[pp.ModelSummary]:
        """The models a page at a time (page_size a call; 0: the server's maximum, 10,000 by default),
        each page asked for when the one before is used up."""
        token = ""
        while True:
            request = es.ListModelsRequest(page_size=page_size, page_token=token)
            reply = self._call(self.stub.ListModels, request)
            yield from reply.models  # type: ignore[attr-defined]
            token = reply.next_page_token  # type: ignore[attr-defined]
            if not token:
                return

    # --- admin ---------------------------------------------------------------------------------
    def delete_model(self, model: str, tenant: str = "") -> es.DeleteModelResponse:
        """Delete everything the service keeps of the tenant's model ("": the default tenant), with an
        admin token; what was removed, per key family. Idempotent, so retried like a read."""
        return self._call(self.stub.DeleteModel, es.DeleteModelRequest(model=model, tenant=tenant))  # type: ignore[return-value]

    def delete_tenant_data(self, tenant: str) -> es.DeleteTenantDataResponse:
        """Delete everything the service keeps of a tenant ("default" included), with an admin token: its
        models deleted and what was removed, per key family. Idempotent."""
        return self._call(self.stub.DeleteTenantData, es.DeleteTenantDataRequest(tenant=tenant))  # type: ignore[return-value]

    def iter_audit(self, tenant: str, page_size: int = 0) -> Iterator[es.AuditEntry]:
        """A tenant's audit trail, oldest first, a page at a time (an admin token): deletions and token use."""
        token = ""
        while True:
            request = es.ReadAuditRequest(tenant=tenant, page_size=page_size, page_token=token)
            reply = self._call(self.stub.ReadAudit, request)
            yield from reply.entries  # type: ignore[attr-defined]
            token = reply.next_page_token  # type: ignore[attr-defined]
            if not token:
                return

    def perturb(
        self,
        predictions: Iterable[Prediction],
        perturbations: Iterable[es.PerturbationSpec],
        seed: int | None = None,
        include_originals: bool = False,
    ) -> es.PerturbResponse:
        """Tagged variants of the predictions (the Perturb RPC); errors as InvalidPredictions."""
        request = es.PerturbRequest(
            predictions=predictions, perturbations=perturbations, include_originals=include_originals
        )
        if seed is not None:
            request.seed = seed
        return self._call(self.stub.Perturb, request)  # type: ignore[return-value]


def tls_credentials(
    ca: str | Path | None, cert: str | Path | None = None, key: str | Path | None = None
) -> grpc.ChannelCredentials:
    """Channel credentials from PEM files: the CA to trust, and a client certificate for mutual TLS."""
    if (cert is None) != (key is None):
        raise ValueError("a client certificate needs its key, and a key its certificate")
    return grpc.ssl_channel_credentials(
        root_certificates=Path(ca).read_bytes() if ca else None,
        private_key=Path(key).read_bytes() if key else None,
        certificate_chain=Path(cert).read_bytes() if cert else None,
    )


def _set_window(
    request: es.GetProfileRequest | es.WatchProfileRequest | es.CompareProfilesRequest, window: Window
) -> None:
    if isinstance(window, tuple):
        start, end = window
        request.range.start_time.FromDatetime(start)
        request.range.end_time.FromDatetime(end)
        return
    if window not in WINDOWS:
        raise ValueError(f"unknown window {window!r}; use one of {sorted(WINDOWS)} or a (start, end) pair")
    request.preset = WINDOWS[window]
