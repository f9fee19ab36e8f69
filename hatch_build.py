"""Hatch build hook: generate the protobuf stubs before every build (wheel or editable)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class ProtoBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "protos"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        path = Path(self.root) / "tools" / "gen_protos.py"
        spec = importlib.util.spec_from_file_location("gen_protos", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.generate(Path(self.root))
