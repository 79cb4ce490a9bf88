"""The documentation site: the generated references match the code, the strict MkDocs build
passes (and fails on a broken link or anchor), and the dataset format page names every
field of the format."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAS_MKDOCS = importlib.util.find_spec("mkdocs") is not None


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["docs/reference/profiles.md", "docs/reference/cli.md"])
def test_generated_reference_is_current(page: str) -> None:
    expected = _generator().pages()[page]
    committed = (ROOT / page).read_text(encoding="utf-8") if (ROOT / page).exists() else ""
    if committed != expected:
        import difflib

        diff = difflib.unified_diff(
            committed.splitlines(), expected.splitlines(), "committed", "generated", lineterm=""
        )
        shown = "\n".join(list(diff)[:40])
        pytest.fail(f"{page} is stale: run make docs-reference\n{shown}")


def test_generated_reference_is_deterministic() -> None:
    generator = _generator()
    assert generator.pages() == generator.pages()


def test_references_name_every_profile_key_and_command() -> None:
    """The generator walks the models and the command tree rather than a list of its own."""
    import click

    from recallbench.cli import main
    from recallbench.systems._http import HttpProfile
    from recallbench.systems._profile import Profile, Server

    pages = _generator().pages()
    profiles, cli = pages["docs/reference/profiles.md"], pages["docs/reference/cli.md"]
    for model in (Profile, Server, HttpProfile):
        for key in model.model_fields:
            assert f"| `{key}` |" in profiles, key
    ctx = click.Context(main, info_name="recallbench")
    for name in main.list_commands(ctx):
        assert f"`recallbench {name}`" in cli, name
        command = main.get_command(ctx, name)
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command, parent=ctx)):
                assert f"`recallbench {name} {sub}`" in cli, f"{name} {sub}"


def test_dataset_page_names_every_field_of_the_format() -> None:
    from recallbench.core import Dataset, Document, Query

    page = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    for model in (Dataset, Document, Query):
        for name, field in model.model_fields.items():
            assert f"`{name}`" in page, f"{model.__name__}.{name} is not in docs/datasets.md"
            if field.is_required():
                marked = f"| `{name}` | **yes**" in page or f"`{name}` (**required**" in page
                assert marked, f"required field {model.__name__}.{name} is not marked required"


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(not HAS_MKDOCS, reason="mkdocs is not installed (pip install -e '.[docs]')")
def test_strict_build_passes(tmp_path: Path) -> None:
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()


@pytest.mark.skipif(not HAS_MKDOCS, reason="mkdocs is not installed (pip install -e '.[docs]')")
@pytest.mark.parametrize(
    ("link", "message"),
    [
        ("[x](measures.md#no-such-heading)", "does not contain an anchor '#no-such-heading'"),
        ("[x](no-such-page.md)", "'no-such-page.md', but the target is not found"),
    ],
)
def test_strict_build_fails_on_a_broken_link(tmp_path: Path, link: str, message: str) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    if (ROOT / "examples").exists():
        shutil.copytree(ROOT / "examples", copy / "examples")
    with (copy / "docs" / "index.md").open("a", encoding="utf-8") as page:
        page.write(f"\n{link}\n")
    built = _build(copy / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert message in built.stdout + built.stderr


def test_the_cli_reference_does_not_depend_on_what_ran_before() -> None:
    """click caches a command's help option with the names of the first context that asks
    for it: a command run on its own (as tests do) has only --help, not -h. The reference
    must come out the same after that."""
    import click
    from click.testing import CliRunner

    from recallbench.cli import main

    ctx = click.Context(main, info_name="recallbench")
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        CliRunner().invoke(command, ["--help"])
    assert _generator().pages()["docs/reference/cli.md"] == (
        ROOT / "docs/reference/cli.md"
    ).read_text(encoding="utf-8")
