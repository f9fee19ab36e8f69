"""One tenant's worst reads and watches do not take the gateway from another (issue 14).

A victim tenant submits batches and reads its profile, first alone, then while an abuser (another
process) holds every watch it is allowed, each over 1970..9999 with its own window, keeps as many
1970..9999 reads in flight as it can (retrying refusals at once) and submits, so every watch
recomputes. The victim's p99 latencies under abuse stay within 2x of the quiet run's (with a floor
for tiny times), health stays SERVING, and the gateway's peak RSS stays under PEAK_RSS_MB. Figures:
docs/production.md ("Bounded reads"); run with -s to print them.
"""

from __future__ import annotations

import multiprocessing

from grpc_health.v1 import health_pb2

from holistic.settings import Settings
from tests.conftest import start_redis
from tests.gateway.noisy_neighbour import Service, abuse_process, p99, seed, victim

ROUNDS = 300
MIN_S = 8.0  # each phase lasts at least this long, so the abuse has time to do its worst
# p99s under 150 ms count as 150 ms: on a shared machine a ratio of tiny times is noise. 50 ms held on
# a faster day of this 2-core machine; on a slower one the landed code measured 127-179 ms under abuse
# (quiet: 12-15 ms), where unbounded reads (tools/mutation_check.py tenant-reads-unbounded) measure 778 ms;
# on 2026-12-02, slower still, 205-240 ms alone (quiet 24-28 ms; the commit before that day's changes
# too: 230 ms), so the floor went from 100 to 150 ms.
FLOOR_S = 0.15
PEAK_RSS_MB = 400  # documented in docs/production.md


def test_one_tenants_worst_reads_and_watches_leave_another_tenant_within_2x(tmp_path):
    proc, sock = start_redis(tmp_path, "--appendonly", "yes")
    service = Service(f"unix://{sock}", tmp_path / "logs")
    ctx = multiprocessing.get_context("spawn")
    stop, ready, report = ctx.Event(), ctx.Event(), ctx.Queue()
    abuser = None
    try:
        buckets = seed(service.address)
        victim(service.address, 20)  # warm up connections and caches
        quiet = victim(service.address, ROUNDS, MIN_S)
        defaults = Settings(redis_url="unix:///unused")
        abuser = ctx.Process(
            target=abuse_process,
            args=(
                service.address,
                defaults.tenant_max_watches,
                4 * defaults.tenant_concurrent_reads,
                ready,
                stop,
                report,
            ),
        )
        abuser.start()
        assert ready.wait(60)
        noisy = victim(service.address, ROUNDS, MIN_S)
        stop.set()
        abused = report.get(timeout=60)
        abuser.join(10)
        rss = service.gateway_peak_rss_mb()
    finally:
        stop.set()
        if abuser is not None and abuser.is_alive():
            abuser.kill()
        service.stop()
        proc.kill()
        proc.wait()
    figures = {
        "rounds quiet/noisy": (len(quiet.submit_s), len(noisy.submit_s)),
        "submit p99 quiet/noisy ms": (p99(quiet.submit_s) * 1e3, p99(noisy.submit_s) * 1e3),
        "profile p99 quiet/noisy ms": (p99(quiet.profile_s) * 1e3, p99(noisy.profile_s) * 1e3),
        "gateway peak RSS MB": rss,
        "buckets per family of the worst read": buckets,
        "abuser": abused,
    }
    print(figures)
    # the abuse was real: worst-window profiles answered (reads or watch updates; which of them gets the
    # tenant's budget first varies) and more refused over the read budget or the caps
    assert abused["reads"] + abused["watch_profiles"] > defaults.tenant_max_watches, figures
    assert abused["refused"] > 0, figures
    assert set(quiet.health) == set(noisy.health) == {health_pb2.HealthCheckResponse.SERVING}
    assert p99(noisy.submit_s) <= 2 * max(p99(quiet.submit_s), FLOOR_S), figures
    assert p99(noisy.profile_s) <= 2 * max(p99(quiet.profile_s), FLOOR_S), figures
    assert rss < PEAK_RSS_MB, figures
