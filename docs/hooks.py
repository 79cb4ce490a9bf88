"""MkDocs hook: the repository's examples/ folder is part of the site, so that the pages
can link the example files (``examples/golden.json``) and the strict build checks those
links like any other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def on_files(files: Files, config: Any) -> Files:
    for path in sorted(EXAMPLES.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            uri = "examples/" + path.relative_to(EXAMPLES).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
