"""Score the diagnosis against the zoo's intended categories (profiles/manifest.json).

    python -m keet.accuracy [--gpu h100] [--manifest profiles/manifest.json]

Prints, per kernel, the intended category and the top findings, then top-1 and top-2
accuracy and a confusion table (intended -> ranked first).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from keet.diagnosis import diagnose_kernel
from keet.ingest import load_profile

DEFAULT_MANIFEST = Path(__file__).resolve().parents[1] / "profiles" / "manifest.json"


@dataclass
class Scored:
    program: str
    kernel: str
    intended: str
    ranked: list[str]

    @property
    def top1(self) -> bool:
        return bool(self.ranked) and self.ranked[0] == self.intended

    @property
    def top2(self) -> bool:
        return self.intended in self.ranked[:2]


def score(gpu: str, manifest_path: Path = DEFAULT_MANIFEST) -> list[Scored]:
    """Diagnose every manifest kernel in the GPU's combined zoo report."""
    manifest = json.loads(manifest_path.read_text())
    profile = load_profile(manifest_path.parent / manifest["gpus"][gpu]["combined_report"])
    scored = []
    for entry in manifest["kernels"]:
        kernel = profile.kernels[entry["measured"][gpu]["combined_report_id"]]
        findings = diagnose_kernel(profile, kernel).findings
        scored.append(Scored(entry["program"], entry["kernel"], entry["category"], [f.category for f in findings]))
    return scored


def report(scored: list[Scored]) -> str:
    lines = [f"{'program':26} {'intended':24} {'ok':4} ranked"]
    for s in scored:
        mark = "1" if s.top1 else ("2" if s.top2 else "-")
        lines.append(f"{s.program:26} {s.intended:24} {mark:4} {', '.join(s.ranked[:3]) or '(no finding)'}")
    total = len(scored)
    top1, top2 = sum(s.top1 for s in scored), sum(s.top2 for s in scored)
    lines.append(f"\ntop-1 {top1}/{total} = {top1 / total:.1%}   top-2 {top2}/{total} = {top2 / total:.1%}")
    confusion = Counter((s.intended, s.ranked[0] if s.ranked else "(none)") for s in scored if not s.top1)
    if confusion:
        lines.append("\nconfusion (intended -> ranked first), misses only:")
        lines.extend(f"  {intended} -> {got}: {count}" for (intended, got), count in sorted(confusion.items()))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    args = parser.parse_args()
    print(report(score(args.gpu, args.manifest)))


if __name__ == "__main__":
    main()
