"""Compile the C extension modules (the gateway's wire proof, the client's JSON line encoder, the
workers' per-minute counts) beside their sources.

Built, never committed, like the protobuf stubs: run by the hatch build hook (any pip install) and by
./dev. Only a C compiler and the Python headers are needed, no setuptools. Where neither is there
(a slim container building from source), each runs without its module: gateway/wire_proof.py falls
back to the pure-Python proof and says so once in its log; holistic_client/json_wire.py parses every
line in Python; metric_services/minutes.py counts in Python; holistic/redis/connection.py packs commands with hiredis.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {
    "gateway/_wireproof": "gateway/_wireproof.c",
    "clients/python/holistic_client/_jsonline": "clients/python/holistic_client/_jsonline.c",
    "metric_services/_minutes": "metric_services/_minutes.c",
    "holistic/redis/_resp": "holistic/redis/_resp.c",
}
PACKAGE_DIRS = {"clients/python/": ""}  # source folder prefix -> where the package sits in a wheel


def wheel_path(root: Path, module: str) -> str:
    """Where a built module goes in the wheel: beside its package's files."""
    path = str(target(root, module).relative_to(root))
    for prefix, installed in PACKAGE_DIRS.items():
        if path.startswith(prefix):
            return installed + path[len(prefix) :]
    return path


def target(root: Path, module: str) -> Path:
    return root / (module + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))


def build(root: Path = ROOT, *, force: bool = False) -> list[Path]:
    """Compile each module whose source is newer than its library; return the libraries built.
    Raises CalledProcessError (with the compiler's message) when the compiler fails."""
    built = []
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    for module, source in SOURCES.items():
        src, out = root / source, target(root, module)
        if not force and out.exists() and out.stat().st_mtime >= src.stat().st_mtime:
            continue
        tmp = out.with_suffix(".tmp")
        cmd = [*cc, "-O2", "-fPIC", "-shared", "-Wall", "-Werror", "-Wno-unused-parameter", f"-I{include}"]
        subprocess.run([*cmd, str(src), "-o", str(tmp)], check=True, capture_output=True, text=True)
        tmp.replace(out)  # atomically: a running gateway keeps the file it loaded
        built.append(out)
    return built


def main() -> int:
    try:
        for path in build(force="--force" in sys.argv):
            print(f"built {path.relative_to(ROOT)}")
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        print(
            f"the C modules were not built ({detail}); the gateway uses the Python proof, the client its Python parser",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
