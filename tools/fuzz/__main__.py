"""``python -m tools.fuzz``: fuzz aotc for a while in worker processes, report, minimize.

Cases are made here (mutate.py) and judged in worker processes (oracle.py), so a crash or a
hang costs one worker, which is restarted. Every bug is minimized (nodes or lines deleted while
the verdict stays the same) and saved under ``--save-to`` as a regression case that
tests/test_fuzz.py runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tools.fuzz.mutate import KINDS, ROOT, Case, make_case
from tools.fuzz.oracle import BUGS, Verdict, judge

CASE_TIMEOUT_S = 120.0


class Worker:
    """A child process judging cases sent one per line; restarted after a crash or a hang."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def judge(self, case: Case, run: bool) -> Verdict:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tools.fuzz", "--worker"],
                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
        assert self.process.stdin and self.process.stdout
        request = {"graph": str(case.graph), "config": case.config and str(case.config), "run": run}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(self.process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(CASE_TIMEOUT_S)
        if reader.is_alive():
            self.process.kill()
            reader.join()
            return Verdict("hang", f"over {CASE_TIMEOUT_S:.0f} s")
        if not answer or not answer[0]:
            code = self.process.wait()
            return Verdict("crash", f"worker died with status {code}")
        return Verdict(**json.loads(answer[0]))

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()


def _serve() -> None:
    """The worker loop: one JSON request per line in, one verdict per line out."""
    for line in sys.stdin:
        request = json.loads(line)
        config = Path(request["config"]) if request["config"] else None
        verdict = judge(Path(request["graph"]), config, request["run"])
        print(json.dumps({"outcome": verdict.outcome, "detail": verdict.detail}), flush=True)


def _group(verdict: Verdict) -> str:
    """Bugs with the same outcome and site are one finding."""
    return f"{verdict.outcome} {verdict.detail.split(': ')[0]}"


def fuzz(args: argparse.Namespace) -> dict[str, object]:
    rng, out = random.Random(args.seed), Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    worker, counts, findings = Worker(), Counter[str](), {}
    deadline, n = time.monotonic() + 60 * args.minutes, 0
    try:
        while time.monotonic() < deadline and (args.cases == 0 or n < args.cases):
            kind = KINDS[n % len(KINDS)]
            folder = out / "cases" / f"{n:06d}"
            folder.mkdir(parents=True)
            case = make_case(kind, rng, folder)
            verdict = worker.judge(case, run=rng.random() < args.run_fraction)
            counts[f"{kind} {verdict.outcome}"] += 1
            if verdict.is_bug and _group(verdict) not in findings:
                findings[_group(verdict)] = _keep(case, verdict, worker, Path(args.save_to))
            elif not verdict.is_bug:
                shutil.rmtree(folder)
            n += 1
    finally:
        worker.close()
    report = {"cases": n, "minutes": args.minutes, "seed": args.seed, "counts": dict(counts)}
    report["findings"] = findings
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def _keep(case: Case, verdict: Verdict, worker: Worker, save_to: Path) -> dict[str, str]:
    """Minimize a new finding and save it as a regression case."""
    same = lambda c: _group(worker.judge(c, run=True)) == _group(verdict)  # noqa: E731
    small = minimize(case, same)
    digest = hashlib.sha256(small.graph.read_bytes() if small.graph.is_file() else b"").hexdigest()
    target = save_to / f"{case.kind}_{digest[:10]}"
    if not target.exists():
        shutil.copytree(small.graph.parent, target)
    return {"verdict": f"{verdict.outcome}: {verdict.detail}", "saved": str(target)}


def minimize(case: Case, still_fails: Callable[[Case], bool]) -> Case:
    """Delete GraphDef nodes or HLO lines one at a time while ``still_fails``; others as is."""
    from aotc.proto import aotc_tf_pb2 as pb

    path = case.graph
    if path.suffix == ".hlo":
        lines = path.read_text().splitlines()
        _shrink(lines, lambda kept: path.write_text("\n".join(kept)), case, still_fails)
    elif path.suffix == ".pbtxt":
        from google.protobuf import text_format

        graph = text_format.Parse(path.read_text(), pb.GraphDef())
        nodes = list(graph.node)
        _shrink(nodes, lambda kept: path.write_text(str(pb.GraphDef(node=kept))), case, still_fails)
    return case


def _shrink(
    items: list, write: Callable[[list], None], case: Case, still_fails: Callable[[Case], bool]
) -> None:  # type: ignore[type-arg]
    i = 0
    while i < len(items):
        trial = items[:i] + items[i + 1 :]
        write(trial)
        if still_fails(case):
            items[:] = trial
        else:
            i += 1
    write(items)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--cases", type=int, default=0, help="stop after this many (0: no limit)")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument(
        "--run-fraction", type=float, default=0.25, help="cases also compiled and run"
    )
    parser.add_argument("--out", default=str(ROOT / "build/fuzz"))
    parser.add_argument("--save-to", default=str(ROOT / "tests/data/fuzz"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _serve()
        return
    report = fuzz(args)
    print(json.dumps({k: v for k, v in report.items()}, indent=2))
    bugs = sum(v for k, v in report["counts"].items() if k.split()[1] in BUGS)  # type: ignore[union-attr]
    sys.exit(1 if bugs else 0)


if __name__ == "__main__":
    main()
