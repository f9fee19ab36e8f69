"""Compute HELM's own values for the conformance fixture, with crfm-helm 0.5.16 from PyPI.

Builds an isolated virtual environment (not a project dependency, not run in CI): crfm-helm 0.5.16
without its dependencies, then HELM's declared requirements except the heavy ones that no metric
class used here imports (torch, torchvision, transformers: the full environment is several GB).
Then runs tools/helm_side.py in it, which feeds the fixture (tools/conformance_fixture.py) to HELM's
metric code and writes HELM's values as JSON next to the fixture; tests/test_helm_conformance.py
compares the service's profile with them.

    python tools/helm_conformance.py [--venv ~/.cache/holistic/helm-0.5.16] [--fixture ...] [--out ...]
                                     [--trec-eval DIR]

HELM's RankingMetric needs its `ranking` extra, pytrec_eval 0.5, whose build downloads trec_eval 9.0.8's
source from GitHub; where GitHub cannot be reached, --trec-eval names a local copy of that source (e.g.
`git -C <clone of usnistgov/trec_eval> archive v9.0.8 | tar x -C DIR`), which pytrec_eval's setup.py
uses instead of the download.

HELM's extractive statistics (SummarizationMetric._compute_data_stats) are SummEval's DataStatsMetric
(the `summarization` extra's summ-eval, installed without its model dependencies, and gin-config, which
it imports), which loads spaCy's `en_core_web_sm` at import, a model download from GitHub; the tool
installs instead spaCy's blank English pipeline packaged under that name (version 0.0.0). Only the
tokenizer is used (`tok.text`), and `en_core_web_sm`'s tokenizer is English's rules, which the blank
pipeline has; no tagger, parser or NER component splits or merges tokens.

NLTK's `punkt_tab` (for HELM's BLEU and bias tokenization) is a download from GitHub that HELM makes
at run time; the tool gives HELM an empty English `punkt_tab` instead (untrained Punkt), which is
exactly what the service does (docs/conformance.md), so the comparison isolates everything else.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import venv
from pathlib import Path

HELM_VERSION = "0.5.16"
ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DIR = ROOT / "tests" / "fixtures" / "helm_conformance"
HEAVY = {"torch", "torchvision", "transformers"}
PYTREC_EVAL = "pytrec_eval==0.5"  # crfm-helm 0.5.16's `ranking` extra
SUMM_EVAL = "summ-eval==0.892"  # its `summarization` extra: summ-eval~=0.892
PUNKT_FILES = ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab")


def build_venv(path: Path, trec_eval: Path | None = None) -> Path:
    """The environment's python, with crfm-helm, its light requirements and pytrec_eval installed (idempotent)."""
    python = path / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(path)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", f"crfm-helm=={HELM_VERSION}"], check=True)
    requires = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, json; print(json.dumps(m.requires('crfm-helm')))"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    wanted = [r for r in json.loads(requires) if "extra ==" not in r and _name(r) not in HEAVY]
    # modules HELM's common imports need that its metadata leaves to extras
    subprocess.run([*pip, *wanted, "pyhocon", "colorlog", "mako"], check=True)
    subprocess.run([*pip, "--no-deps", SUMM_EVAL], check=True)
    subprocess.run([*pip, "gin-config"], check=True)
    install_blank_en_core_web_sm(python, pip)
    install_pytrec_eval(python, pip, trec_eval)
    return python


def install_blank_en_core_web_sm(python: Path, pip: list[str]) -> None:
    """spaCy's blank English pipeline as the package `en_core_web_sm` (see the module docstring)."""
    have = subprocess.run([str(python), "-c", "import en_core_web_sm"], capture_output=True)
    if have.returncode == 0:
        return
    with tempfile.TemporaryDirectory() as tmp:
        pipeline, out = Path(tmp) / "pipeline", Path(tmp) / "out"
        out.mkdir()
        make = f"import spacy; spacy.blank('en').to_disk({str(pipeline)!r})"
        subprocess.run([str(python), "-c", make], check=True)
        subprocess.run(
            [str(python), "-m", "spacy", "package", str(pipeline), str(out), "--name", "core_web_sm",
             "--version", "0.0.0", "--build", "sdist"],
            check=True,
        )  # fmt: skip
        (sdist,) = out.glob("*/dist/en_core_web_sm-0.0.0.tar.gz")
        subprocess.run([*pip, str(sdist)], check=True)


def install_pytrec_eval(python: Path, pip: list[str], trec_eval: Path | None) -> None:
    """HELM's `ranking` extra; with `trec_eval`, built from that source instead of GitHub's."""
    have = subprocess.run([str(python), "-c", "import pytrec_eval"], capture_output=True)
    if have.returncode == 0:
        return
    if trec_eval is None:
        subprocess.run([*pip, PYTREC_EVAL], check=True)
        return
    name, version = PYTREC_EVAL.split("==")
    with urllib.request.urlopen(f"https://pypi.org/simple/{name.replace('_', '-')}/") as r:  # PyPI's simple index
        page = r.read().decode()
    sdist = re.findall(rf'href="(https://[^"#]*/{name}-{re.escape(version)}\.tar\.gz)', page)[0]
    with tempfile.TemporaryDirectory() as tmp, urllib.request.urlopen(sdist) as r:
        with tarfile.open(fileobj=r, mode="r|gz") as tar:
            tar.extractall(tmp, filter="data")
        (src,) = Path(tmp).iterdir()
        shutil.copytree(trec_eval, src / "trec_eval")  # setup.py prefers a local trec_eval/trec_eval.h
        subprocess.run([*pip, str(src)], check=True)


def _name(requirement: str) -> str:
    for sep in "<>=~!; [":
        requirement = requirement.split(sep, 1)[0]
    return requirement.strip().lower()


def empty_punkt(nltk_data: Path) -> Path:
    """An NLTK data folder whose English punkt_tab has no trained parameters."""
    english = nltk_data / "tokenizers" / "punkt_tab" / "english"
    english.mkdir(parents=True, exist_ok=True)
    for name in PUNKT_FILES:
        (english / name).touch()
    return nltk_data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "holistic" / f"helm-{HELM_VERSION}")
    ap.add_argument("--fixture", type=Path, default=FIXTURE_DIR / "predictions.jsonl")
    ap.add_argument("--out", type=Path, default=FIXTURE_DIR / "helm_values.json")
    ap.add_argument("--trec-eval", type=Path, help="trec_eval 9.0.8 source, when GitHub cannot be reached")
    args = ap.parse_args()
    python = build_venv(args.venv, args.trec_eval)
    nltk_data = empty_punkt(args.venv / "nltk_data")
    env = {"NLTK_DATA": str(nltk_data), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    subprocess.run(
        [str(python), str(ROOT / "tools" / "helm_side.py"), str(args.fixture), str(args.out)], check=True, env=env
    )
    print(f"HELM {HELM_VERSION} values -> {args.out}")


if __name__ == "__main__":
    main()
