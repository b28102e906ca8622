"""The optimize loop: evaluate the kernel, profile and explain the best, ask a strategy for
candidates, evaluate each (static scan, build, correctness stages, timing), keep the fastest
correct one that beats the best by more than the noise, repeat.

Run folder (OUT):
    .keet-optimize-run            marker: keet made this folder, for this problem (runfolder.py)
    run.json                      summary: problem, device, rounds, every candidate's decision
    report.html                   the run as a page (speedup per round, the diffs that gained)
    problem.toml, reference.cu    what was optimized against
    reference/build.log
    candidates/<id>/source.cu     each candidate: source, build.log, result.json (stages,
                   build.log      timing, decision and reason), run.log, and for the baseline
                   result.json    and each new best: profile.ncu-rep, explanation.txt/.json;
                                  llm strategy: prompt.md and reply.md (the model's whole answer)
    scratch/                      inputs, executables, outputs (deleted unless --keep-scratch)
"""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from keet.errors import KeetError
from keet.optimize.build import BuildResult, build_candidate, default_arch
from keet.optimize.harness import HarnessRun, run_harness
from keet.optimize.knobs import Proposal, TuneStrategy, discover_knobs
from keet.optimize.problem import Problem
from keet.optimize.profiling import ProfileResult, explain_existing, profile_candidate
from keet.optimize.runfolder import prepare_run_folder
from keet.optimize.stages import (
    StageResult,
    check_correctness,
    first_failure,
    static_scan,
)
from keet.optimize.timing import NOISY_SPREAD, Timing, is_faster, summarize
from keet.outputs import atomic_write_text
from keet.sandbox import require_sandbox

BUILD_WORKERS = 8


def _absolute(path: Path | None) -> Path | None:
    """Absolute from here on: builds and runs happen in other working folders, where a
    relative path would name another file (a relative --out once failed every build)."""
    return Path(os.path.abspath(path)) if path is not None else None


@dataclass
class Candidate:
    id: str
    round: int
    label: str
    rationale: str
    source: str | None
    knobs: dict[str, str] = field(default_factory=dict)
    defines: list[str] = field(default_factory=list)
    stages: list[StageResult] = field(default_factory=list)
    timing: Timing | None = None
    status: str = "pending"  # kept | rejected | baseline | unverified
    reason: str = ""
    build_seconds: float | None = None
    speedup: float | None = None  # baseline median / this median
    profiled: bool = False
    profile_detail: str = ""
    parent: str | None = None  # the best it was derived from

    @property
    def correct(self) -> bool:
        return bool(self.stages) and all(s.passed for s in self.stages) and self.timing is not None

    @property
    def failed_stage(self) -> str | None:
        failure = first_failure(self.stages)
        return failure.stage if failure else None

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("source", "stages", "timing")}
        data["stages"] = [s.as_dict() for s in self.stages]
        data["timing"] = self.timing.as_dict() if self.timing else None
        data["failed_stage"] = self.failed_stage
        return data


def decide_round(best: Candidate, candidates: list[Candidate]) -> Candidate | None:
    """Mark every candidate of a round kept or rejected; return the new best (or None).

    Incorrect candidates are rejected at their first failed stage; a correct one must beat the
    best by more than max(2%, measured noise) and be the fastest such of its round."""
    winners = []
    for candidate in candidates:
        if candidate.status == "unverified":
            continue
        if not candidate.correct:
            failure = first_failure(candidate.stages)
            candidate.status = "rejected"
            candidate.reason = f"incorrect: {failure.stage}: {failure.detail}" if failure else "not evaluated"
            continue
        faster, text = is_faster(candidate.timing, best.timing)
        if candidate.timing.noisy:
            candidate.status, candidate.reason = "rejected", f"timing too noisy (spread {candidate.timing.spread:.1%} > {NOISY_SPREAD:.0%}): {text}"
        elif faster:
            winners.append((candidate, text))
        else:
            candidate.status, candidate.reason = "rejected", f"not faster beyond noise: {text}"
    if not winners:
        return None
    winners.sort(key=lambda pair: pair[0].timing.median_ms)
    champion, text = winners[0]
    champion.status, champion.reason = "kept", f"correct and faster: {text}"
    for loser, loser_text in winners[1:]:
        loser.status, loser.reason = "rejected", f"faster than the best ({loser_text}) but {champion.id} is faster still"
    return champion


class Loop:
    """One optimize run; see the module docstring for the folder it writes."""

    def __init__(self, problem: Problem, kernel_source: Path, reference_source: Path, out_dir: Path, *, strategy: str = "tune",
                 rounds: int = 8, arch: str | None = None, gpu: bool = True, profile: bool = True, chat: Any = None,
                 nvcc: str | None = None, keep_scratch: bool = False, baseline_profile: Path | None = None, sandbox: bool = True,
                 log=print) -> None:
        self.problem = problem
        self.kernel_source = _absolute(kernel_source)
        self.reference_source = _absolute(reference_source)
        self.out = out_dir = _absolute(out_dir)
        self.strategy_name = strategy
        self.rounds = rounds
        self.arch = arch or default_arch()
        self.gpu = gpu
        self.profile = profile
        self.chat = chat
        self.nvcc = nvcc
        self.log = log
        self.keep_scratch = keep_scratch
        self.baseline_profile = _absolute(baseline_profile)
        self.sandbox = sandbox  # False: trusted human-written code only (--no-sandbox)
        self.scratch = out_dir / "scratch"
        self.inputs_dir = self.scratch / "inputs"
        self.candidates: list[Candidate] = []
        self.reference_run: HarnessRun | None = None
        self.reference_timing: Timing | None = None
        self.explanations: dict[str, str] = {}
        self.stop_reason = ""

    # -------------------------------------------------------------- folders and records
    def candidate_dir(self, candidate: Candidate) -> Path:
        return self.out / "candidates" / candidate.id

    def scratch_dir(self, name: str) -> Path:
        return self.scratch / name

    def save_candidate(self, candidate: Candidate) -> None:
        folder = self.candidate_dir(candidate)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "result.json").write_text(json.dumps(candidate.as_dict(), indent=1))

    # -------------------------------------------------------------- reference
    def inputs(self) -> list[Path]:
        return [p for p in (self.kernel_source, self.reference_source, self.problem.path, self.baseline_profile) if p is not None]

    def prepare_reference(self) -> None:
        # before anything is written: model-written code never runs outside the sandbox
        if not self.sandbox and self.strategy_name == "llm":
            raise KeetError("--no-sandbox is for trusted, human-written kernels; the llm strategy's candidates run only in the sandbox")
        if self.sandbox:
            require_sandbox("the candidates' code (pass --no-sandbox only for trusted, human-written kernels)")
        prepare_run_folder(self.out, self.problem.name, self.inputs())
        if self.problem.path:
            shutil.copyfile(self.problem.path, self.out / "problem.toml")
        shutil.copyfile(self.reference_source, self.out / "reference.cu")
        build = build_candidate(self.reference_source, self.scratch_dir("reference"), self.arch, self.nvcc, self.sandbox)
        (self.out / "reference").mkdir(exist_ok=True)
        (self.out / "reference" / "build.log").write_text(build.log)
        if not build.ok:
            raise KeetError(f"{self.reference_source}: the reference does not build (see {self.out / 'reference' / 'build.log'})")
        if not self.gpu:
            return
        run = run_harness(build.executable, self.problem, self.inputs_dir, self.scratch_dir("reference"), sandbox=self.sandbox)
        (self.out / "reference" / "run.log").write_text(run.process.stdout[-20000:] + run.process.stderr[-20000:])
        if not (run.finished and run.process.ok and run.times_ms):
            raise KeetError(f"{self.reference_source}: the reference did not run to completion ({run.process.summary()})")
        self.reference_run = run
        self.reference_timing = summarize(run.times_ms)

    # -------------------------------------------------------------- one candidate
    def new_candidate(self, proposal: Proposal, round_number: int, parent: str | None) -> Candidate:
        candidate = Candidate(f"c{len(self.candidates):03d}", round_number, proposal.label, proposal.rationale, proposal.source,
                              dict(proposal.knobs), list(proposal.defines), parent=parent)
        self.candidates.append(candidate)
        folder = self.candidate_dir(candidate)
        folder.mkdir(parents=True, exist_ok=True)
        if proposal.source is not None:
            (folder / "source.cu").write_text(proposal.source)
        if proposal.prompt:
            (folder / "prompt.md").write_text(proposal.prompt)
        if proposal.reply:
            (folder / "reply.md").write_text(proposal.reply)
        return candidate

    def build(self, candidate: Candidate) -> BuildResult | None:
        """Static scan and build (thread-safe: each candidate has its own folders)."""
        if candidate.source is None:
            candidate.stages.append(StageResult("proposal", False, candidate.rationale))
            return None
        scan = static_scan(candidate.source)
        candidate.stages.append(scan)
        if not scan.passed:
            return None
        build = build_candidate(self.candidate_dir(candidate) / "source.cu", self.scratch_dir(candidate.id), self.arch, self.nvcc,
                                self.sandbox)
        (self.candidate_dir(candidate) / "build.log").write_text(build.log)
        candidate.build_seconds = build.seconds
        first_error = next((ln for ln in build.log.splitlines() if "error" in ln.lower()), build.log.strip().splitlines()[-1])
        candidate.stages.append(StageResult("build", build.ok, "built" if build.ok else first_error[:400]))
        return build

    def run_and_check(self, candidate: Candidate, build: BuildResult | None) -> None:
        if build is None or not build.ok:
            return
        if not self.gpu:
            candidate.status = "unverified"
            candidate.reason = "built; not run: no GPU on this machine (run stages skipped)"
            candidate.stages.append(StageResult("run", False, "not run: no GPU"))
            return
        run = run_harness(build.executable, self.problem, self.inputs_dir, self.scratch_dir(candidate.id), sandbox=self.sandbox)
        (self.candidate_dir(candidate) / "run.log").write_text(run.process.stdout[-20000:] + "\n" + run.process.stderr[-20000:])
        candidate.stages += check_correctness(self.problem, run, self.reference_run)
        if run.times_ms:
            candidate.timing = summarize(run.times_ms)
            (self.candidate_dir(candidate) / "times.json").write_text(json.dumps({"times_ms": run.times_ms}))
        elif first_failure(candidate.stages) is None:
            candidate.stages.append(StageResult("timing_noise", False, "no timings came back"))
        if candidate.timing and self.baseline_timing():
            candidate.speedup = round(self.baseline_timing().median_ms / candidate.timing.median_ms, 4)

    def baseline_timing(self) -> Timing | None:
        return self.candidates[0].timing if self.candidates else None

    def profile_best(self, candidate: Candidate) -> ProfileResult | None:
        if not (self.gpu and self.profile):
            return None
        executable = self.scratch_dir(candidate.id) / "candidate"
        result = profile_candidate(executable, self.problem, self.inputs_dir, self.scratch_dir(candidate.id), self.problem.kernel,
                                   self.sandbox)
        if result.report and result.report.is_file():
            shutil.copyfile(result.report, self.candidate_dir(candidate) / "profile.ncu-rep")
        self.record_explanation(candidate, result)
        self.log(f"  profile {candidate.id}: {result.detail}" + (f"; findings: {', '.join(result.categories) or 'none'}" if result.ok else ""))
        return result

    def record_explanation(self, candidate: Candidate, result: ProfileResult) -> None:
        folder = self.candidate_dir(candidate)
        candidate.profiled, candidate.profile_detail = result.ok, result.detail
        if result.explanation:
            (folder / "explanation.json").write_text(json.dumps(result.explanation, indent=1))
            (folder / "explanation.txt").write_text(result.text)
            self.explanations[candidate.id] = result.text

    # -------------------------------------------------------------- the loop
    def evaluate_all(self, candidates: list[Candidate]) -> None:
        with ThreadPoolExecutor(max_workers=BUILD_WORKERS) as pool:
            builds = list(pool.map(self.build, candidates))
        for candidate, build in zip(candidates, builds):  # one at a time on the GPU
            self.run_and_check(candidate, build)

    def run(self) -> dict[str, Any]:
        started = time.time()
        self.prepare_reference()
        source = self.kernel_source.read_text()
        baseline = self.new_candidate(Proposal("baseline", source, {k.name: k.default for k in discover_knobs(source)}, "the kernel as given"), 0, None)
        self.evaluate_all([baseline])
        if self.gpu and not baseline.correct:
            baseline.status = "rejected"
            failure = first_failure(baseline.stages)
            baseline.reason = f"the kernel as given is incorrect: {failure.stage}: {failure.detail}" if failure else "not evaluated"
            self.stop_reason = "the baseline failed the harness; nothing to optimize"
        elif self.gpu:
            baseline.status, baseline.reason, baseline.speedup = "baseline", "the kernel as given (correct)", 1.0
        elif baseline.failed_stage in ("static_scan", "build"):
            baseline.status, baseline.reason = "rejected", f"{baseline.failed_stage}: {first_failure(baseline.stages).detail}"
            self.stop_reason = f"the baseline failed its {baseline.failed_stage}; nothing to optimize"
        self.save_candidate(baseline)
        self.log(f"baseline: {baseline.status} {self.timing_text(baseline)}")
        if not self.stop_reason:
            self.search(baseline)
        return self.finish(started)

    def explain_given_profile(self, candidate: Candidate) -> ProfileResult:
        """Explain a profile of the baseline recorded elsewhere (e.g. on a GPU machine, for a
        run on a machine without one)."""
        result = explain_existing(self.baseline_profile)
        self.record_explanation(candidate, result)
        self.log(f"  explained {self.baseline_profile}: {result.detail}")
        return result

    def search(self, best: Candidate) -> None:
        profile = self.explain_given_profile(best) if self.baseline_profile else self.profile_best(best)
        categories = profile.categories if profile and profile.ok else []
        strategy = self.make_strategy(best)
        for round_number in range(1, self.rounds + 1):
            proposals = self.proposals(strategy, best, categories)
            if not proposals:
                self.stop_reason = f"no new candidates after round {round_number - 1} (search converged)"
                break
            candidates = [self.new_candidate(p, round_number, best.id) for p in proposals]
            self.evaluate_all(candidates)
            winner = decide_round(best, candidates) if self.gpu else None
            for candidate in candidates:
                if candidate.status == "pending":
                    candidate.status = "rejected"
                    failure = first_failure(candidate.stages)
                    candidate.reason = f"{failure.stage}: {failure.detail}" if failure else "not evaluated"
                self.save_candidate(candidate)
                self.log(f"round {round_number} {candidate.id} {candidate.label}: {candidate.status} ({candidate.reason[:160]})")
                self.tell_strategy(strategy, candidate)
            if isinstance(strategy, TuneStrategy):
                strategy.notice(winner is not None)
            if winner is not None:
                best = winner
                profile = self.profile_best(best)
                categories = profile.categories if profile and profile.ok else categories
                self.save_candidate(best)
        else:
            self.stop_reason = f"stopped after {self.rounds} rounds"

    def make_strategy(self, best: Candidate):
        if self.strategy_name == "tune":
            strategy = TuneStrategy(best.source)
            if not strategy.knobs:
                self.log("tune: the kernel exposes no knobs (#ifndef NAME / #define NAME value): nothing to search")
            return strategy
        from keet.optimize.llm_strategy import LLMStrategy, default_chat_model

        return LLMStrategy(self.problem, self.chat if self.chat is not None else default_chat_model(None, None))

    def proposals(self, strategy, best: Candidate, categories: list[str]) -> list[Proposal]:
        if isinstance(strategy, TuneStrategy):
            return strategy.propose(best.knobs, categories)
        return strategy.propose(best.source, self.explanations.get(best.id, ""))

    def tell_strategy(self, strategy, candidate: Candidate) -> None:
        if not isinstance(strategy, TuneStrategy):
            change = candidate.rationale if candidate.source is not None else "(no usable code)"
            strategy.notice_outcome(candidate.label, change, f"{candidate.status}: {candidate.reason[:400]}")

    # -------------------------------------------------------------- summary
    @staticmethod
    def timing_text(candidate: Candidate) -> str:
        return f"{candidate.timing.median_ms:.4f} ms" if candidate.timing else "(not timed)"

    def best(self) -> Candidate:
        kept = [c for c in self.candidates if c.status in ("baseline", "kept")]
        return min(kept, key=lambda c: c.timing.median_ms) if kept else self.candidates[0]

    def finish(self, started: float) -> dict[str, Any]:
        best = self.best()
        summary = {
            "problem": self.problem.name,
            "kernel": self.problem.kernel,
            "strategy": self.strategy_name,
            "arch": self.arch,
            "gpu": self.gpu,
            "rounds_requested": self.rounds,
            "rounds_run": max((c.round for c in self.candidates), default=0),
            "stop_reason": self.stop_reason,
            "reference_timing": self.reference_timing.as_dict() if self.reference_timing else None,
            "baseline_ms": self.baseline_timing().median_ms if self.baseline_timing() else None,
            "best": {"id": best.id, "label": best.label, "round": best.round, "knobs": best.knobs,
                     "median_ms": best.timing.median_ms if best.timing else None, "speedup": best.speedup},
            "candidates": [c.as_dict() for c in self.candidates],
            "seconds": round(time.time() - started, 1),
        }
        atomic_write_text(self.out / "run.json", json.dumps(summary, indent=1))
        from keet.optimize.report import write_run_report

        write_run_report(self.out, summary, {c.id: c.source or "" for c in self.candidates}, self.explanations)
        if not self.keep_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
        return summary
