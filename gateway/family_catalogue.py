"""What `ListFamilies` answers: the families the gateway can fold and those the deployment runs.

Installed comes from the entry points beside the gateway (holistic/families/registry.py), deployed from the
consumer groups on the work stream (gateway/deployment.py), the backlog from the backlog monitor's
last poll, so the answer costs no Redis call beyond what the gateway reads anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from gateway.deployment import Deployment
from holistic.families import Family
from holistic.families.registry import installed
from holistic.v1 import evaluation_service_pb2 as es


class FamilyCatalogue:
    def __init__(
        self, deployment: Deployment, backlog: Callable[[], Mapping[str, int]], load: Callable[[str], Family]
    ) -> None:
        """`backlog`: batches not yet applied per family, as last polled."""
        self.deployment = deployment
        self.backlog = backlog
        self.load = load

    async def list(self) -> es.ListFamiliesResponse:
        deployed = set(await self.deployment.families())
        backlog = self.backlog()
        reply = es.ListFamiliesResponse()
        for name in sorted(set(installed()) | deployed):
            status = reply.families.add(family=name, deployed=name in deployed, backlog_batches=backlog.get(name, 0))
            try:
                fam = self.load(name)
            except KeyError:  # deployed, its package not installed beside the gateway
                continue
            status.installed = True
            status.version = fam.version
            status.axis = fam.axis.name if fam.axis is not None else ""
        return reply
