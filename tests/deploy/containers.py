"""Podman on a machine without a registry: the images docker-compose.yml needs, built from Debian packages.

A Debian bookworm rootfs (debootstrap: python3, python3-venv, redis-server) imported as
localhost/holistic-debian:bookworm serves as the Python base and as the Redis image; the project's
image is built by the real Dockerfile on it, installing from a wheelhouse made on the host (no network
inside the build). Everything is cached between runs on the same machine: the base image by name,
the dependency wheels by the hash of pyproject.toml, the project image by the hash of what the
Dockerfile copies, so an unchanged tree builds nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("HOLISTIC_CONTAINER_CACHE", "/var/cache/holistic-containers"))
BASE_IMAGE = "localhost/holistic-debian:bookworm"
# podman's default OCI runtime (crun) fails on this kernel's cgroup layout; runc works. The runtime may
# not raise resource limits, so every container gets explicit ones, no higher than the current ones.
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
"""
COPIED = ("pyproject.toml", "hatch_build.py", "README.md", "Dockerfile", "protos", "tools", "holistic", "gateway",
          "metric_services", "clients/python", "clients/web/holistic_dashboard")  # fmt: skip


def missing_tools() -> list[str]:
    compose = Path(sys.executable).parent / "podman-compose"
    need = {"podman": shutil.which("podman"), "debootstrap": shutil.which("debootstrap"),
            "runc": shutil.which("runc"), "podman-compose": str(compose) if compose.exists() else None}  # fmt: skip
    out = [name for name, path in need.items() if path is None]
    if os.geteuid() != 0:
        out.append("root (podman here runs as root)")
    return out


def environment() -> dict[str, str]:
    CACHE.mkdir(parents=True, exist_ok=True)
    conf = CACHE / "containers.conf"
    if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
        conf.write_text(CONTAINERS_CONF)
    return dict(os.environ, CONTAINERS_CONF=str(conf))


def run(*args: str | Path, env: dict[str, str], timeout: float = 900, cwd: Path = ROOT) -> str:
    out = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} failed ({out.returncode}):\n{out.stdout[-3000:]}\n"
                           f"{out.stderr[-3000:]}")  # fmt: skip
    return out.stdout


def image_exists(name: str, env: dict[str, str]) -> bool:
    return subprocess.run(["podman", "image", "exists", name], env=env).returncode == 0


def debian_mirror() -> str:
    for path in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        if path.exists():
            for line in path.read_text().splitlines():
                words = line.split()
                if words[:1] == ["URIs:"] and "debian" in words[1]:
                    return words[1]
                if words[:1] == ["deb"] and words[1].rstrip("/").endswith("/debian"):
                    return words[1]
    return "http://deb.debian.org/debian"


def base_image(env: dict[str, str]) -> str:
    if not image_exists(BASE_IMAGE, env):
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            rootfs = Path(tmp) / "rootfs"
            run("debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates,redis-server",
                "bookworm", rootfs, debian_mirror(), env=env)  # fmt: skip
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            subprocess.run(["podman", "import", "-", BASE_IMAGE], stdin=tar.stdout, env=env, check=True,
                           capture_output=True)  # fmt: skip
            tar.wait()
    return BASE_IMAGE


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def tracked(*parts: str) -> list[Path]:
    names = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *parts,
                env=dict(os.environ)).split("\0")  # fmt: skip
    return [ROOT / n for n in names if n and (ROOT / n).is_file()]


def project_image(env: dict[str, str]) -> str:
    """localhost/holistic-eval:<hash of what the Dockerfile copies>, built once per change."""
    name = f"localhost/holistic-eval:{_digest(tracked(*COPIED))}"
    if image_exists(name, env):
        return name
    pip = [sys.executable, "-m", "pip", "wheel", "-q"]
    deps = CACHE / f"wheels-{_digest([ROOT / 'pyproject.toml', ROOT / 'deploy/wheels/requirements.txt'])}"
    if not deps.exists():
        partial = Path(tempfile.mkdtemp(dir=CACHE))
        # the documented command (deploy/wheels/README.md): requirements.txt adds async-timeout for the
        # image's Python, Debian's 3.11.2 (redis-py's marker: < 3.11.3)
        run(*pip, "-w", partial, ".[semantic]", "-r", "deploy/wheels/requirements.txt", env=env)
        for whl in partial.glob("holistic_eval-*.whl"):
            whl.unlink()
        partial.rename(deps)
    wheels = ROOT / "deploy" / "wheels"
    try:
        for whl in deps.glob("*.whl"):
            shutil.copy(whl, wheels / whl.name)
        run(*pip, "--no-deps", "-w", wheels, ".", env=env)
        run("podman", "build", "-q", "--build-arg", f"BASE={base_image(env)}", "-t", name, ".", env=env)
    finally:
        for whl in wheels.glob("*.whl"):
            whl.unlink()
    stale = run("podman", "images", "--format", "{{.Repository}}:{{.Tag}}", "localhost/holistic-eval", env=env)
    for old in set(stale.split()) - {name}:  # one image per tree is enough: keep the disk from filling
        subprocess.run(["podman", "rmi", "-f", old], env=env, capture_output=True)
    return name


def remove_project(project: str, env: dict[str, str]) -> None:
    """Everything of a compose project, scaled replicas included (podman-compose down misses those)."""
    ids = run("podman", "ps", "-aq", "--filter", f"label=io.podman.compose.project={project}", env=env).split()
    if ids:
        subprocess.run(["podman", "rm", "-f", "-t", "2", *ids], env=env, capture_output=True)
    for args in (["pod", "rm", "-f", f"pod_{project}"], ["network", "rm", "-f", f"{project}_default"],
                 ["volume", "rm", "-f", f"{project}_redis-data"]):  # fmt: skip
        subprocess.run(["podman", *args], env=env, capture_output=True)
