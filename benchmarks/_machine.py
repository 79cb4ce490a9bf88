"""What a benchmark's numbers were measured on, and its results file that says so."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
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
    script: str,
    title: str,
    argv: list[str] | None,
    host: dict[str, object],
    body: str,
    path: Path | None = None,
) -> None:
    """``body`` as Markdown in ``path`` (by default ``results/<script's name>.md`` beside
    the scripts): the title, the exact command (``argv``, by default this process's),
    the machine, then ``body``. ``script`` is the calling script's ``__file__``."""
    name = Path(script).name
    path = path or Path(__file__).parent / "results" / f"{Path(script).stem}.md"
    arguments = argv if argv is not None else sys.argv[1:]
    command = f"python benchmarks/{name} " + " ".join(arguments)
    path.parent.mkdir(parents=True, exist_ok=True)
    machine_line = f"Machine: `{json.dumps(host)}`"
    path.write_text(f"# {title}\n\n`{command.strip()}`\n\n{machine_line}\n\n{body}\n")
    print(f"written: {path}")
