"""python -m perfmodel.hardware --write-docs   # regenerate docs/model.md's parameter table
python -m perfmodel.hardware --check        # exit 1 if that table is stale

The table is generated from perfmodel/hardware/parameters.toml (perfmodel.hardware.schema) and
lives between the parameters:begin/end markers of docs/model.md in a source checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from perfmodel.hardware.schema import (
    DOCS_BEGIN,
    DOCS_END,
    documented_table,
    parameter_table,
    with_table,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "model.md"


def main(argv: list[str]) -> int:
    if argv not in (["--write-docs"], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    if not DOCS.is_file():
        print(f"{DOCS}: not found (the docs live in a source checkout)", file=sys.stderr)
        return 2
    text = DOCS.read_text()
    documented, table = documented_table(text), parameter_table()
    if documented is None:
        print(f"{DOCS}: no {DOCS_BEGIN} ... {DOCS_END} markers to write between", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        if documented != table:
            print(f"{DOCS}: the parameter table is stale: run `python -m perfmodel.hardware --write-docs`", file=sys.stderr)
            return 1
        return 0
    if documented != table:
        DOCS.write_text(with_table(text, table))
        print(f"wrote the parameter table into {DOCS}")
    else:
        print(f"{DOCS}: the parameter table is current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
