"""Where the benchmark scripts keep what they measured: one JSON file per run, written atomically."""

from __future__ import annotations

import json
from pathlib import Path

from deid_nb.core import atomic_write, get_artifacts_dir


def write_results(results, name: str, output: str | Path | None = None) -> Path:
    "Write `results` as JSON to `output` (default: <artifacts>/benchmarks/<name>.json) via a temp file + rename; print and return the path."
    output = Path(output) if output else get_artifacts_dir() / "benchmarks" / f"{name}.json"
    with atomic_write(output) as f:
        json.dump(results, f, indent=1)
    print(f"written {output}")
    return output
