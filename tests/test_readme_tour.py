"""The README's five-minute tour works as written: its first block (nothing but the clone
needed) runs line by line through the installed command in a fresh folder, and every
`recallbench` line of the README names commands and options that exist."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from recallbench.cli import main

ROOT = Path(__file__).resolve().parents[1]
TOUR = "## A five-minute tour"
GETTING_STARTED = "docs/getting-started.md"


def _blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def _commands(block: str) -> list[str]:
    """The block's command lines: continuations joined, trailing comments dropped."""
    lines = block.replace("\\\n", " ").splitlines()
    return [line.split("  #", 1)[0].strip() for line in lines if line.strip()]


def _tour() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TOUR in readme, f"README.md has no {TOUR!r} section"
    return _commands(_blocks(readme.split(TOUR, 1)[1])[0])


def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    commands = _tour()
    assert sum(c.startswith("recallbench ") for c in commands) >= 5
    # the installed console script when there is one beside this interpreter, else the module
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = Path(sys.executable).parent / "recallbench"
    target = f'"{script}"' if script.exists() else f'"{sys.executable}" -m recallbench'
    (bin_dir / "recallbench").write_text(f'#!/bin/sh\nexec {target} "$@"\n')
    (bin_dir / "recallbench").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLBENCH_")}
    env |= {
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "RECALLBENCH_HOME": str(tmp_path / "home"),
    }
    work = tmp_path / "clone"
    work.mkdir()
    for command in commands:
        if command.startswith("source "):  # activating .venv: the PATH above does it
            continue
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (
            f"{command}\nexit {done.returncode}\n{done.stdout}{done.stderr}"
        )


def test_every_readme_command_exists() -> None:
    """Every `recallbench` line of the README and of the docs' tour of every command, in
    the five-minute tour or not, names a real command and only options that command takes."""
    texts = [(ROOT / p).read_text(encoding="utf-8") for p in ("README.md", GETTING_STARTED)]
    lines = [
        c for t in texts for b in _blocks(t) for c in _commands(b) if c.startswith("recallbench")
    ]
    assert len(lines) >= 10
    for line in lines:
        words = shlex.split(line)[1:]
        path: list[str] = []
        for word in words:
            if word.startswith("-"):
                break
            probe = CliRunner().invoke(main, [*path, word, "--help"], prog_name="recallbench")
            if probe.exit_code != 0 or not probe.output.startswith("Usage: recallbench"):
                break
            if f"recallbench {' '.join([*path, word])} " not in probe.output.splitlines()[0] + " ":
                break
            path.append(word)
        assert path or not words or words[0].startswith("-"), f"{line!r}: no such command"
        help_text = CliRunner().invoke(main, [*path, "--help"], prog_name="recallbench").output
        for word in words:
            if word.startswith("--"):
                assert word.split("=")[0] in help_text, f"{word} of {line!r} is not an option"
