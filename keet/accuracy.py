"""Score the diagnosis against the zoo's intended categories (profiles/manifest.json).

    python -m keet.accuracy [--gpu h100 [--gpu h200]] [--manifest PATH] [--corpus]

The manifest defaults to profiles/manifest.json in the working directory or a parent, else in
the source checkout (keet.project_data).

Prints, per kernel, the intended category and the top findings, then top-1 and top-2
accuracy and a confusion table (intended -> ranked first), and the kernels left with an empty
verdict (there must be none). With --corpus, the label-free checks and the before/after pairs
of keet.accuracy_corpus follow.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from keet.diagnosis import diagnose_kernel, read_ahead
from keet.errors import KeetError
from keet.ingest import load_profile
from keet.profile import Profile
from keet.project_data import corpus_manifest
from keet.project_data import manifest_path as find_manifest


@dataclass
class Scored:
    program: str
    kernel: str
    intended: str
    ranked: list[str]
    verdict: str = ""

    @property
    def top1(self) -> bool:
        return bool(self.ranked) and self.ranked[0] == self.intended

    @property
    def top2(self) -> bool:
        return self.intended in self.ranked[:2]


def score(gpu: str, manifest_path: Path | None = None, profile: Profile | None = None) -> list[Scored]:
    """Diagnose every manifest kernel in the GPU's combined zoo report (manifest_path None:
    the zoo found by keet.project_data; profile: that report, already loaded with read_ahead())."""
    manifest_path = find_manifest(manifest_path)
    manifest = json.loads(manifest_path.read_text())
    if gpu not in manifest["gpus"]:
        raise KeetError(f"{manifest_path}: no GPU {gpu!r} in the zoo (it has {', '.join(manifest['gpus'])})")
    if profile is None:
        profile = load_profile(manifest_path.parent / manifest["gpus"][gpu]["combined_report"], read_ahead=read_ahead())
    scored = []
    for entry in manifest["kernels"]:
        kernel = profile.kernels[entry["measured"][gpu]["combined_report_id"]]
        diagnosis = diagnose_kernel(profile, kernel)
        scored.append(Scored(entry["program"], entry["kernel"], entry["category"], [f.category for f in diagnosis.findings],
                             diagnosis.verdict.text if diagnosis.verdict else ""))
    return scored


def report(scored: list[Scored]) -> str:
    lines = [f"{'program':26} {'intended':24} {'ok':4} ranked"]
    for s in scored:
        mark = "1" if s.top1 else ("2" if s.top2 else "-")
        lines.append(f"{s.program:26} {s.intended:24} {mark:4} {', '.join(s.ranked[:3]) or '(no finding)'}")
    total = len(scored)
    top1, top2 = sum(s.top1 for s in scored), sum(s.top2 for s in scored)
    lines.append(f"\ntop-1 {top1}/{total} = {top1 / total:.1%}   top-2 {top2}/{total} = {top2 / total:.1%}   "
                 f"empty verdicts {sum(not s.verdict for s in scored)}")
    confusion = Counter((s.intended, s.ranked[0] if s.ranked else "(none)") for s in scored if not s.top1)
    if confusion:
        lines.append("\nconfusion (intended -> ranked first), misses only:")
        lines.extend(f"  {intended} -> {got}: {count}" for (intended, got), count in sorted(confusion.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m keet.accuracy", description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="append", choices=["h100", "h200"],
                        help="the zoo's GPU (repeatable; default: h100 and h200)")
    parser.add_argument("--corpus", action="store_true",
                        help="after the zoo, the label-free checks on the real-world corpus (keet.accuracy_corpus)")
    parser.add_argument("--manifest", type=Path, help="the zoo's manifest.json (default: profiles/manifest.json found from the "
                                                      "working directory, else in the source checkout)")
    args = parser.parse_args(argv)
    try:
        for gpu in args.gpu or ["h100", "h200"]:
            print(f"zoo (development set), {gpu}:")
            print(report(score(gpu, args.manifest)))
            print()
        if args.corpus:
            from keet import accuracy_corpus

            corpus = corpus_manifest(find_manifest(args.manifest))
            if corpus is None:
                raise KeetError("no corpus/manifest.json beside the zoo manifest")
            found = accuracy_corpus.verdicts(corpus, progress=lambda line: print(line, file=sys.stderr))
            print()
            print(accuracy_corpus.report(found, accuracy_corpus.pair_checks(corpus, found)))
    except KeetError as exc:  # the CLI convention: one line, exit status 2
        print(f"keet.accuracy: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
