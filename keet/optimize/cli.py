"""`keet optimize`: the command (registered in keet/cli.py; heavy imports happen inside)."""

from __future__ import annotations

from pathlib import Path

import click

from keet.cli_options import output_option
from keet.errors import KeetError


def _problem_path(kernel: Path, explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    for candidate in (kernel.with_suffix(".toml"), kernel.parent / "problem.toml"):
        if candidate.is_file():
            return candidate
    raise KeetError(f"{kernel}: no problem spec (pass --problem, or put problem.toml next to the kernel)")


@click.command()
@click.argument("kernel_path", metavar="KERNEL.cu", type=click.Path(exists=True, dir_okay=False))
@click.option("--kernel", "kernel_name", required=True, help="Name of the kernel function (what Nsight Compute profiles).")
@click.option("--reference", "reference_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="A straightforward correct implementation with the same launch() entry point.")
@click.option("--problem", "problem_path", help="Problem spec TOML (default: KERNEL.toml or problem.toml next to the kernel).")
@click.option("--rounds", default=8, show_default=True, type=click.IntRange(0, 1000), help="Rounds of proposals (0: evaluate the kernel only).")
@click.option("--strategy", type=click.Choice(["tune", "llm"]), default="tune", show_default=True)
@output_option("out_dir", type=click.Path(file_okay=False), help="Run folder (default: optimize-runs/<problem>-<strategy>).")
@click.option("--arch", default=None, help="GPU architecture to build for (default: the reference GPU's build_target, sm_90a).")
@click.option("--gpu/--no-gpu", default=None, help="Run candidates on the GPU (default: when nvidia-smi finds one).")
@click.option("--profile/--no-profile", default=True, show_default=True, help="Profile and explain the baseline and each new best with ncu.")
@click.option("--keep-scratch", is_flag=True, help="Keep inputs, executables and outputs under RUN/scratch.")
@click.option("--baseline-profile", type=click.Path(exists=True, dir_okay=False),
              help="Explain this existing profile of the kernel instead of profiling the baseline (e.g. a GPU run's, on a machine without one).")
@click.option("--no-sandbox", "no_sandbox", is_flag=True,
              help="Build and run candidates without the bubblewrap sandbox: only for trusted, human-written kernels (tune strategy).")
@click.option("--model", help="llm strategy: model name (default: KEET_MODEL).")
@click.option("--base-url", help="llm strategy: OpenAI-compatible endpoint (default: OPENAI_BASE_URL).")
def optimize(kernel_path: str, kernel_name: str, reference_path: str, problem_path: str | None, rounds: int, strategy: str,
             out_dir: str | None, arch: str, gpu: bool | None, profile: bool, keep_scratch: bool, baseline_profile: str | None, no_sandbox: bool,
             model: str | None, base_url: str | None) -> None:
    """Optimize KERNEL.cu: check, time, profile, explain, propose, keep the best (docs/optimize.md)."""
    from keet.optimize.build import has_gpu
    from keet.optimize.loop import Loop
    from keet.optimize.problem import load_problem

    kernel = Path(kernel_path)
    problem = load_problem(_problem_path(kernel, problem_path))
    if problem.kernel != kernel_name:
        raise KeetError(f"{problem.path}: the problem's kernel is {problem.kernel!r}, not {kernel_name!r}")
    chat = None
    if strategy == "llm" and no_sandbox:  # said before anything else: no extra or endpoint makes it allowed
        raise KeetError("--no-sandbox is for trusted, human-written kernels; the llm strategy's candidates run only in the sandbox")
    if strategy == "llm":
        from keet.optimize.llm_strategy import default_chat_model

        chat = default_chat_model(model, base_url)
    use_gpu = has_gpu() if gpu is None else gpu
    out = Path(out_dir) if out_dir else Path("optimize-runs") / f"{problem.name}-{strategy}"
    loop = Loop(problem, kernel, Path(reference_path), out, strategy=strategy, rounds=rounds, arch=arch, gpu=use_gpu,
                profile=profile, chat=chat, keep_scratch=keep_scratch,
                baseline_profile=Path(baseline_profile) if baseline_profile else None, sandbox=not no_sandbox, log=click.echo)
    summary = loop.run()
    best = summary["best"]

    def ms(value: float | None) -> str:
        return f"{value:.4f} ms" if value else "not timed"

    speedup = f"{best['speedup']:.2f}x" if best["speedup"] else "-"
    click.echo(f"{summary['problem']}: baseline {ms(summary['baseline_ms'])}, best {best['id']} ({best['label']}) {ms(best['median_ms'])}, "
               f"speedup {speedup} after {summary['rounds_run']} rounds; {summary['stop_reason']}; run folder {out}")
