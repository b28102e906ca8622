"""Generate a large `ncu --csv --page details` file by replicating the kernels of a real one.

    python benchmarks/gen_details_csv.py OUT.csv [--rows 100000] [--source FILE] [--time]

Each copy of the source's kernels gets new IDs (continuing ncu's numbering); everything
else, including the thousands separators, rule rows and trailing commas, is kept byte for
byte. With --time the file is then loaded with keet.ingest.load_profile and timed.
"""

from __future__ import annotations

import argparse
import csv
import io
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO / "tests" / "data" / "ncu" / "sm75_details_rules_copy_blocked.csv"


def replicate(source: Path, rows_wanted: int) -> str:
    """The source's header and rows, repeated with fresh kernel IDs until rows_wanted rows."""
    text = source.read_text(encoding="utf-8")
    start = text.index('"ID","Process ID"')
    lines = text[start:].splitlines()
    header, body = lines[0], [line for line in lines[1:] if line.startswith('"')]
    parsed = list(csv.reader(body))
    kernel_ids = sorted({int(row[0]) for row in parsed})
    out = io.StringIO()
    out.write(header + "\n")
    written, copy = 0, 0
    while written < rows_wanted:
        offset = copy * (max(kernel_ids) + 1)
        for line, row in zip(body, parsed):
            if written == rows_wanted:
                break
            # The ID is the first quoted field; rewrite only it so the rest stays byte-identical.
            rest = line[len(row[0]) + 2 :]
            out.write(f'"{int(row[0]) + offset}"{rest}\n')
            written += 1
        copy += 1
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--time", action="store_true", help="load the file with keet and report the time")
    args = parser.parse_args()
    args.out.write_text(replicate(args.source, args.rows), encoding="utf-8")
    print(f"wrote {args.rows} rows to {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")
    if args.time:
        from keet.ingest import load_profile

        timings = []
        for _ in range(3):
            start = time.perf_counter()
            profile = load_profile(args.out)
            timings.append(time.perf_counter() - start)
        print(f"load_profile: {len(profile.kernels)} kernels, {len(profile.metrics)} metric rows, "
              f"best {min(timings):.3f} s, runs {', '.join(f'{t:.3f}' for t in timings)} s")


if __name__ == "__main__":
    main()
