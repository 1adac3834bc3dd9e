#!/usr/bin/env python
"""How much of ``keras.applications`` aotc's front end covers, and which models compile.

Run in a TensorFlow 2 + Keras 3 environment, with aotc on PATH (or ``--aotc``)::

    python tools/keras_apps_coverage.py --aotc .venv/bin/aotc

Each model is built with ``weights=None`` at a small input (batch 1), frozen the way the test
fixtures are (``tests/data/make_fixtures.py``: ``convert_variables_to_constants_v2``), then
``aotc inspect --json`` lists the TF ops aotc does not translate, and ``aotc compile
--no-cache`` (under a time limit) says whether it compiles. Results go to a JSON file next to
the frozen graphs (so a rerun only does the models not yet measured) and to a markdown table,
``docs/keras_applications.md`` by default. Models run one at a time, smallest first.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "data"))

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import freeze, spec, tensor_to_fetch  # noqa: E402

# (name, input side): small and common first; sides respect each model's minimum (Xception 71,
# InceptionV3/InceptionResNetV2 75, the rest 32).
MODELS: list[tuple[str, int]] = [
    ("MobileNet", 96),
    ("MobileNetV2", 96),
    ("MobileNetV3Small", 96),
    ("MobileNetV3Large", 96),
    ("EfficientNetB0", 96),
    ("ResNet50", 96),
    ("DenseNet121", 96),
    ("NASNetMobile", 96),
    ("ConvNeXtTiny", 96),
    ("Xception", 96),
    ("InceptionV3", 96),
    ("VGG16", 96),
    ("EfficientNetV2B0", 96),
    ("ResNet50V2", 96),
    ("InceptionResNetV2", 96),
    ("ResNet101", 96),
    ("DenseNet201", 96),
    ("EfficientNetB3", 96),
    ("NASNetLarge", 96),
]


def frozen_model(name: str, side: int, out_dir: Path) -> tuple[Path, Path, int]:
    """Freeze ``keras.applications.<name>`` to out_dir/<name>.pb with its aotc config."""
    shape = [1, side, side, 3]
    model = getattr(keras.applications, name)(weights=None, input_shape=tuple(shape[1:]))

    @tf.function(input_signature=[spec(shape, name="x")])
    def f(x):
        return model(x, training=False)

    graph_def, feeds, fetches = freeze(f)
    pb = out_dir / f"{name}.pb"
    pb.write_bytes(graph_def.SerializeToString())
    cfg = out_dir / f"{name}.yaml"
    lines = [f"name: {name.lower()}", "feeds:"]
    lines += [f"  - {{name: {tensor_to_fetch(t)}, shape: {shape}, dtype: float32}}" for t in feeds]
    lines += ["fetches:"] + [f"  - {{name: {tensor_to_fetch(t)}}}" for t in fetches]
    cfg.write_text("\n".join(lines) + "\n")
    return pb, cfg, len(graph_def.node)


def inspect_missing(aotc: str, pb: Path) -> dict[str, int]:
    """The ops of pb that aotc does not translate, with their node counts."""
    out = subprocess.run([aotc, "inspect", str(pb), "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    unsupported = json.loads(out.stdout)["unsupported"]
    return {op: len(v) if isinstance(v, list) else int(v) for op, v in unsupported.items()}


def compile_model(aotc: str, pb: Path, cfg: Path, limit_s: int) -> tuple[str, float]:
    """('yes' | 'timeout' | the error line, seconds) of ``aotc compile --no-cache``."""
    cmd = [aotc, "compile", str(pb), "-c", str(cfg), "-o", str(pb.with_suffix("")), "--no-cache"]
    start = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return f"timeout (> {limit_s} s)", time.monotonic() - start
    seconds = time.monotonic() - start
    if out.returncode == 0:
        return "yes", seconds
    lines = (out.stderr or out.stdout).strip().splitlines()
    return (lines[-1] if lines else f"exit {out.returncode}"), seconds


def measure(name: str, side: int, args: argparse.Namespace) -> dict:
    """One row: nodes, missing ops, compile result; a failure to build or freeze is a row too."""
    row: dict = {"model": name, "input": f"1x{side}x{side}x3"}
    try:
        pb, cfg, row["nodes"] = frozen_model(name, side, args.work_dir)
        row["missing"] = inspect_missing(args.aotc, pb)
    except Exception as e:  # noqa: BLE001 - the row reports it
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return row
    keras.backend.clear_session()
    if name in args.skip_compile or time.time() > args.compile_until:
        row["compiles"] = "not tried (time)"
        return row
    row["compiles"], row["compile_s"] = compile_model(args.aotc, pb, cfg, args.limit_s)
    return row


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict], limit_s: int, version: str) -> str:
    """The report: one table row per model, then the union of missing ops."""
    union: dict[str, int] = {}
    out = [
        "# keras.applications coverage",
        "",
        "Written by `tools/keras_apps_coverage.py` (rerun it to refresh): each model built with",
        "`weights=None`, batch 1, frozen like the test fixtures, then `aotc inspect` (missing",
        f"ops, with node counts) and `aotc compile --no-cache` limited to {limit_s} s, one model",
        "at a time on a shared 2-core machine (compile seconds are wall time under that load).",
        "(Keras 3 has no RegNet models.)",
        f"Measured with {version}, TensorFlow {tf.__version__}, Keras {keras.__version__}.",
        "",
        "| model | input | #nodes | missing ops | compiles | compile s |",
        "|---|---|---:|---|---|---:|",
    ]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | {r['input']} | | | build error: {cell(r['error'])} | |")
            continue
        for op, n in r["missing"].items():
            union[op] = union.get(op, 0) + n
        missing = ", ".join(f"{op} ({n})" for op, n in sorted(r["missing"].items())) or "none"
        secs = f"{r['compile_s']:.0f}" if "compile_s" in r else ""
        out.append(
            f"| {r['model']} | {r['input']} | {r['nodes']} | {missing} "
            f"| {cell(r['compiles'])} | {secs} |"
        )
    out += ["", "Union of missing ops (nodes over all models above):", ""]
    out += [f"- `{op}` ({n})" for op, n in sorted(union.items())] or ["- none"]
    return "\n".join(out) + "\n"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--aotc", default="aotc", help="the aotc executable")
    p.add_argument("--label", help="which aotc, for the doc (default: aotc --version)")
    p.add_argument("--work-dir", type=Path, default=Path("build/keras_apps"))
    p.add_argument("--doc", type=Path, default=REPO / "docs" / "keras_applications.md")
    p.add_argument("--models", nargs="*", help="only these (default: all, smallest first)")
    p.add_argument("--limit-s", type=int, default=300, help="time limit of one compile")
    p.add_argument("--skip-compile", nargs="*", default=[], help="inspect only these")
    p.add_argument("--budget-s", type=float, default=1e9, help="stop starting models after")
    p.add_argument("--compile-budget-s", type=float, default=1e9, help="stop compiling after")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    start = time.time()
    args.compile_until = start + args.compile_budget_s
    args.work_dir.mkdir(parents=True, exist_ok=True)
    results = args.work_dir / "results.json"
    version = args.label or subprocess.run([args.aotc, "--version"], capture_output=True, text=True)
    version = version if isinstance(version, str) else version.stdout.strip()
    done = {r["model"]: r for r in json.loads(results.read_text())} if results.exists() else {}
    for name, side in MODELS:
        if args.models and name not in args.models or name in done:
            continue
        if time.time() - start > args.budget_s:
            break
        done[name] = measure(name, side, args)
        print(json.dumps(done[name]), flush=True)
        results.write_text(json.dumps(list(done.values()), indent=1))
        write_doc(done, args, version)
    write_doc(done, args, version)
    return 0


def write_doc(done: dict[str, dict], args: argparse.Namespace, version: str) -> None:
    order = [m for m, _ in MODELS]
    rows = sorted(done.values(), key=lambda r: order.index(r["model"]))
    args.doc.write_text(markdown(rows, args.limit_s, version))


if __name__ == "__main__":
    sys.exit(main())
