"""What a benchmark's numbers were measured on, and its results file that says so."""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path


def machine(**extra: object) -> dict[str, object]:
    """The date, CPU model, cores, load average and Python at the start, plus ``extra``
    (library versions, the cores a run was pinned to)."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model,
        "cores": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        **extra,
    }


def write_results(
    path: Path, title: str, script: str, argv: list[str], host: dict[str, object], body: str
) -> None:
    """``path`` as Markdown: the title, the exact command, the machine, then ``body``."""
    command = f"python benchmarks/{script} " + " ".join(argv)
    path.parent.mkdir(parents=True, exist_ok=True)
    machine_line = f"Machine: `{json.dumps(host)}`"
    path.write_text(f"# {title}\n\n`{command.strip()}`\n\n{machine_line}\n\n{body}\n")
    print(f"written: {path}")
