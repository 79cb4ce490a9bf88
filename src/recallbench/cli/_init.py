"""`recallbench init`: write the starter files of a project (configuration, a golden
dataset, a CI workflow)."""

from __future__ import annotations

from pathlib import Path

import click

from recallbench.cli._errors import reports_errors


@click.command(
    epilog="""\b
Examples:
  recallbench init              # into the current folder
  recallbench init my-project
  recallbench init --force      # replace the files recallbench init wrote before

\b
Exit codes: 0 written; 2 a file is there already (each is named; nothing is written)."""
)
@click.argument(
    "folder", type=click.Path(file_okay=False, path_type=Path), default=Path("."), required=False
)
@click.option("--force", is_flag=True, help="Replace the files that exist already.")
@reports_errors
def init(folder: Path, force: bool) -> None:
    """Write recallbench.toml, golden.json and .github/workflows/recallbench.yml into
    FOLDER (default: the current one): all of them or none."""
    from recallbench.gates._starter import write_starter

    for path in write_starter(folder, force=force):
        click.echo(f"wrote {path}")
    where = "" if folder.resolve() == Path.cwd().resolve() else f"cd {folder} && "
    click.echo("next:")
    click.echo(f"  {where}recallbench datasets validate golden.json   # then put your own in it")
    click.echo(f"  {where}recallbench run --out out                   # measure (recallbench.toml)")
    click.echo(f"  {where}recallbench gate out                        # check the [gates]")
    click.echo("  recallbench systems init -- COMMAND ...      # a profile for your MCP server")
