"""Hatch build hook: generate the protobuf stubs and compile the C modules (gateway wire proof,
client JSON line encoder) before every build (wheel or editable)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _tool(root: Path, name: str) -> ModuleType:
    path = root / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ProtoBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "protos"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        _tool(root, "gen_protos").generate(root)
        if self.target_name == "sdist":  # sources only: the C is compiled where the wheel is built
            return
        native = _tool(root, "build_native")
        try:
            native.build(root)
        except (OSError, subprocess.CalledProcessError) as exc:  # no compiler: the gateway's Python path
            detail = getattr(exc, "stderr", "") or exc
            print(f"holistic: the C modules were not built ({detail}); the gateway will use the Python proof,"
                  " the client its Python parser", file=sys.stderr)  # fmt: skip
            return
        if self.target_name == "wheel" and version != "editable":
            for module in native.SOURCES:
                lib = native.target(root, module)
                build_data["force_include"][str(lib)] = native.wheel_path(root, module)
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
