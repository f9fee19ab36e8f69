"""A container's environment and command line as the kubelet builds them, so a test can run a manifest's
process for real: envFrom ConfigMaps first, then `env` in order, secretKeyRef and configMapKeyRef
resolved, and `$(VAR)` references expanded with the variables defined before (an undefined reference
stays as written, `$$` is a literal `$`), the same in args.
"""

from __future__ import annotations

import re
from typing import Any

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _REF.sub(one, text)


def container_env(
    container: dict[str, Any], secrets: dict[str, dict[str, str]], config_maps: dict[str, dict[str, str]]
) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(config_maps[source["configMapRef"]["name"]])
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = expand(var["value"], env)
            continue
        ref = var["valueFrom"]
        if "secretKeyRef" in ref:
            key = ref["secretKeyRef"]
            if key.get("optional") and key["key"] not in secrets.get(key["name"], {}):
                continue  # as Kubernetes does: an optional key that is not there leaves the variable unset
            env[var["name"]] = secrets[key["name"]][key["key"]]
        else:
            env[var["name"]] = config_maps[ref["configMapKeyRef"]["name"]][ref["configMapKeyRef"]["key"]]
    return env


def container_args(container: dict[str, Any], env: dict[str, str]) -> list[str]:
    return [expand(a, env) for a in container.get("args", [])]
