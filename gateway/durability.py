"""What "Redis holds the batch" means before the gateway answers.

everysec (default): the batch is in Redis's AOF file (write(2) done, fsync within about a second)
before the gateway answers, so killing the Redis process loses nothing acknowledged and a host crash
(power, kernel) up to about 1-2 s of batches. Redis alone does not promise the first part: while its
once-a-second background fsync is still running (a slow disk), it postpones write(2) for up to 2 s
yet keeps answering, so a Redis kill then loses acknowledged writes. AofBarrier closes that window:
an answer waits until Redis's written AOF size has passed the batch. AofWatch reports the stalls.

strict: every write is fsynced before Redis answers, which needs `appendonly yes` and `appendfsync
always`; the gateway checks this at start and refuses to run otherwise. (Redis >= 7.2 could offer
strict on everysec with WAITAOF; the Redis here is 7.0, so that path is not built.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis

from gateway.poller import Poller
from holistic.errors import ConfigError, Unavailable
from holistic.process.observability import AOF_DELAYED_FSYNC, AOF_ENABLED, AOF_WAIT_SECONDS
from holistic.redis.connection import RETRYABLE
from holistic.redis.scripts import Scripts

log = logging.getLogger("holistic.gateway")


async def check_strict(r: aioredis.Redis) -> None:
    try:
        config = await r.config_get("append*")
    except redis.ResponseError as exc:  # CONFIG disabled, as on some managed Redis
        raise ConfigError(
            "HOLISTIC_DURABILITY=strict: cannot read Redis's appendfsync (CONFIG is disabled); "
            "make sure it is `always`, then use durability everysec"
        ) from exc
    appendonly, fsync = str(config.get("appendonly", "")), str(config.get("appendfsync", ""))
    if appendonly != "yes" or fsync != "always":
        raise ConfigError(
            "HOLISTIC_DURABILITY=strict needs Redis with appendonly yes and appendfsync always "
            f"(found appendonly={appendonly or '?'}, appendfsync={fsync or '?'})"
        )
    log.info("durability strict: Redis fsyncs every write before answering (appendfsync always)")


class AofWatch:
    """Tells operators when everysec's promise is weaker than they think, off the request path: a
    Redis without the AOF (a restart loses everything acknowledged) and fsync stalls (a disk that
    cannot keep up, when even a Redis process kill loses acknowledged batches)."""

    def __init__(self, r: aioredis.Redis, interval_s: float = 5.0) -> None:
        self.r = r
        self.delayed: int | None = None
        self.enabled: bool | None = None
        self._poller = Poller("aof-watch", self.poll, interval_s)

    async def poll(self) -> None:
        try:
            info = await self.r.info("persistence")
        except redis.ResponseError as exc:  # INFO renamed or disabled, as on some managed Redis
            log.warning("cannot read Redis's persistence state (%s); not watching the AOF", exc)
            self._poller.stopping = True
            return
        enabled = int(info.get("aof_enabled", 0)) == 1
        AOF_ENABLED.set(1 if enabled else 0)
        if enabled != self.enabled:
            if not enabled:
                log.warning(
                    "Redis runs without the AOF (appendonly no): a Redis restart loses every batch not yet "
                    "applied by all families; run it with appendonly yes (docs/production.md)"
                )
            self.enabled = enabled
        delayed = int(info.get("aof_delayed_fsync", 0))
        AOF_DELAYED_FSYNC.set(delayed)
        if self.delayed is not None and delayed > self.delayed:
            log.warning(
                "Redis's AOF fsync stalled %d more time(s) (aof_delayed_fsync=%d): the disk is not keeping up, "
                "and a Redis kill during a stall loses up to ~2 s of acknowledged batches; use a faster disk "
                "or HOLISTIC_DURABILITY=strict",
                delayed - self.delayed,
                delayed,
            )
        self.delayed = delayed

    async def start(self) -> None:
        self._poller.start()

    async def stop(self) -> None:
        await self._poller.stop()


@dataclass(frozen=True)
class AofState:
    """Where one Redis process's AOF stands, from INFO server + persistence (holistic/redis/lua/aof_state.lua)."""

    run_id: str
    epoch: tuple[int, int]  # (rewrites, rewrite in progress): the size is recomputed when a rewrite ends
    written: int  # bytes write(2)-ten to the AOF files
    end: int  # written + buffered: covers every write answered before the INFO ran
    enabled: bool

    @classmethod
    def of(cls, reply: list[Any]) -> AofState:
        """From holistic/redis/lua/aof_state.lua's reply (the INFO fields, parsed in Redis)."""
        run_id, enabled, written, buffered, rewrites, rewriting = (
            x.decode() if isinstance(x, bytes) else str(x) for x in reply
        )
        return cls(
            run_id=run_id if run_id != "0" else "",
            epoch=(int(rewrites), int(rewriting)),
            written=int(written),
            end=int(written) + int(buffered),
            enabled=int(enabled) == 1,
        )

    @classmethod
    async def read(cls, scripts: Scripts, client: aioredis.Redis) -> AofState:
        """The state on `client`'s connection: after the writes sent on it before."""
        return cls.of(await scripts.aof_state(client=client))


@dataclass
class _Waiter:
    done: asyncio.Future[None]
    run_id: str
    epoch: tuple[int, int]
    target: int


class AofBarrier:
    """Holds a SubmitPredictions answer until Redis has written the batch to its AOF file.

    The submit's own writes end with an INFO on the same connection: its run_id names the Redis
    process holding them, and written + buffered bounds where they end in the AOF. One loop serves
    every waiting answer: it reads INFO (a few hundred bytes) and releases the waiters whose target
    the written size has passed, usually at the first look (one more round trip). A different run_id
    (Redis restarted: the writes may be gone) fails the waiter with UNAVAILABLE, so the client
    retries and the idempotent ingest answers or re-adds the batch; an AOF rewrite, which recomputes
    the size, re-targets the waiter to a later look.
    """

    def __init__(self, r: aioredis.Redis, timeout_s: float = 10.0, interval_s: float = 0.001) -> None:
        self.r = r
        self.scripts = Scripts(r)
        self.timeout_s = timeout_s
        self.interval_s = interval_s
        self._waiters: list[_Waiter] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def wait(self, state: AofState) -> None:
        """Return once the writes that `state` (read after them, on their connection) covers are written."""
        if not state.enabled or state.end <= state.written:  # no AOF (AofWatch warns), or nothing buffered
            return
        loop = asyncio.get_running_loop()
        waiter = _Waiter(loop.create_future(), state.run_id, state.epoch, state.end)
        self._waiters.append(waiter)
        self._wake.set()
        start = loop.time()
        try:
            await asyncio.wait_for(asyncio.shield(waiter.done), self.timeout_s)
        except TimeoutError:
            raise Unavailable(
                f"Redis has not written the batch to its AOF within {self.timeout_s:g} s (disk stalled?); "
                "retry with the same batch_id"
            ) from None
        finally:
            AOF_WAIT_SECONDS.observe(loop.time() - start)
            if not waiter.done.done():
                waiter.done.cancel()
            self._waiters = [w for w in self._waiters if w is not waiter]

    def _fail(self, waiters: list[_Waiter], why: str) -> None:
        for w in waiters:
            if not w.done.done():
                w.done.set_exception(Unavailable(f"{why}; retry with the same batch_id"))
        self._waiters = [w for w in self._waiters if not w.done.done()]

    def _settle(self, current: list[_Waiter], state: AofState) -> None:
        """Release, fail or re-target the waiters that were waiting before `state` was asked for."""
        self._fail([w for w in current if w.run_id != state.run_id], "redis restarted before the batch was written")
        for w in current:
            if w.done.done():
                continue
            if w.epoch != state.epoch:
                w.epoch, w.target = state.epoch, state.end
            elif state.written >= w.target:
                w.done.set_result(None)
        self._waiters = [w for w in self._waiters if not w.done.done()]

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            current = list(self._waiters)  # their writes were answered before this INFO is sent
            try:
                state = await AofState.read(self.scripts, self.r)
            except RETRYABLE as exc:
                self._fail(current, f"redis is unreachable ({exc})")
                await asyncio.sleep(0.05)
            else:
                self._settle(current, state)
            if self._waiters:
                await asyncio.sleep(self.interval_s)
            else:
                self._wake.clear()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="aof-barrier")

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._fail(list(self._waiters), "the gateway is stopping")
