"""A small `kustomize build` for the features deploy/kubernetes uses, so the tests render offline.

Supported, with kustomize's semantics: `resources` (YAML files, and directories holding their own
kustomization, rendered first), `patches` of the JSON 6902 kind (a list of operations from `path` or
`patch`, applied to every resource the `target`'s kind and name select, at least one), and
`namespace` (set on every namespaced resource). Anything else in a kustomization is an error, never
silently ignored, so a manifest cannot come to depend on a feature this renderer skips. Like
kustomize, two resources with the same kind, name and namespace are an error, and so is a patch file
outside the kustomization's directory (kustomize's default load restrictor).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "patches", "namespace"}
# Cluster-scoped kinds among what the manifests use (kustomize's namespace transformer skips them).
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
                  "StorageClass", "PriorityClass", "ClusterTriggerAuthentication"}  # fmt: skip


class KustomizeError(ValueError):
    pass


def resource_id(doc: dict[str, Any]) -> tuple[str, str, str]:
    meta = doc.get("metadata", {})
    return (doc["kind"], meta.get("namespace", ""), meta["name"])


def _load_file(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def build(directory: Path) -> list[dict[str, Any]]:
    kfile = directory / "kustomization.yaml"
    if not kfile.is_file():
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    spec = yaml.safe_load(kfile.read_text()) or {}
    unknown = set(spec) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{kfile}: unsupported fields {sorted(unknown)}")
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for entry in spec.get("resources", []):
        path = (directory / entry).resolve()
        docs = build(path) if path.is_dir() else _load_file(path)
        for doc in docs:
            rid = resource_id(doc)
            if rid in seen:
                raise KustomizeError(f"{kfile}: resource {rid} is defined twice")
            seen.add(rid)
            out.append(copy.deepcopy(doc))
    for patch in spec.get("patches", []):
        _apply_patch(out, patch, directory, kfile)
    namespace = spec.get("namespace")
    if namespace:
        for doc in out:
            if doc["kind"] not in CLUSTER_SCOPED:
                doc.setdefault("metadata", {})["namespace"] = namespace
    return out


def _apply_patch(docs: list[dict[str, Any]], patch: dict[str, Any], directory: Path, kfile: Path) -> None:
    if "path" in patch and not (directory / patch["path"]).resolve().is_relative_to(directory.resolve()):
        raise KustomizeError(f"{kfile}: patch {patch['path']} is outside the kustomization's directory")
    text = (directory / patch["path"]).read_text() if "path" in patch else patch.get("patch", "")
    ops = yaml.safe_load(text)
    if not isinstance(ops, list):
        raise KustomizeError(f"{kfile}: only JSON 6902 patches (a list of operations) are supported")
    target = patch.get("target") or {}
    if set(target) - {"kind", "name"} or not target:
        raise KustomizeError(f"{kfile}: a patch target is selected by kind and name only")
    matched = 0
    for i, doc in enumerate(docs):
        if doc["kind"] == target.get("kind", doc["kind"]) and doc["metadata"]["name"] == target.get(
            "name", doc["metadata"]["name"]
        ):
            docs[i] = jsonpatch.apply_patch(doc, ops)
            matched += 1
    if not matched:
        raise KustomizeError(f"{kfile}: patch target {target} matches no resource")
