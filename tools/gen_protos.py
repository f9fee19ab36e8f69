"""Generate the Python protobuf/gRPC stubs from protos/ into the source tree.

Stubs are built, never committed: this keeps grpcio-tools, the protobuf runtime and the
generated code in lockstep. Run by the hatch build hook (any pip install) and by ./dev.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"


def proto_files() -> list[Path]:
    return sorted(p for p in PROTOS.joinpath("holistic").rglob("*.proto"))


def generate(out: Path = ROOT) -> list[Path]:
    """Write *_pb2.py, *_pb2_grpc.py and .pyi files under out/holistic/...; return them."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    bindir = Path(sys.executable).parent
    plugins = [
        f"--plugin=protoc-gen-{name}={bindir / f'protoc-gen-{name}'}"
        for name in ("mypy", "mypy_grpc")
        if (bindir / f"protoc-gen-{name}").exists()
    ]
    files = [str(p.relative_to(PROTOS)) for p in proto_files()]
    args = [
        "grpc_tools.protoc",
        f"-I{PROTOS}",
        f"-I{well_known}",
        *plugins,
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed: {' '.join(args)}")
    written = []
    for rel in files:
        pkg_dir = out / Path(rel).parent
        init = pkg_dir / "__init__.py"
        if not init.exists():
            init.write_text("# Generated package: protobuf stubs built from protos/.\n")
        written.extend(pkg_dir.glob(Path(rel).stem + "_pb2*"))
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for path in generate(out):
        print(path.relative_to(out))
