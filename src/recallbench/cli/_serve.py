"""`recallbench serve`: the local dashboard over the history and telemetry store."""

from __future__ import annotations

import re
import socket
import sys
from typing import TYPE_CHECKING

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, workspace_option
from recallbench.serve._auth import TOKEN_ENV

if TYPE_CHECKING:
    from recallbench.serve._pool import PoolOrder

DEFAULT_PORT = 8770
HOST = "127.0.0.1"
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~-]+")


@click.command(
    epilog=f"""\b
Examples:
  recallbench serve                              # the default store, port {DEFAULT_PORT}
  recallbench serve --store sqlite:///ci/history.db --workspace team-a
  recallbench serve --annotator alice --dataset agent-memory-sample
  recallbench serve --port 0                     # any free port
  recallbench serve --labels-per-pair 2          # two annotators a pair: agreement
  recallbench serve --dataset agent-memory-sample --pool 3 --pool 5   # judging pool
Open the URL printed at start: it carries the token (?token=...), which the browser then
keeps in a cookie; without the token every request is refused (403). Only 127.0.0.1
listens. Pages: runs and trends, two runs compared (what changed, each query's two lists
side by side), shadow tests, the query log and feedback, the annotation queue (keys 0-3
grade, s skips, u undoes your own last action), blind pairwise comparison (keys 1, 2, =),
agreement (people with each other: Cohen's and Fleiss' kappa; the judge with people),
adjudication of conflicts, and the judging pool's progress. Each annotator's label is kept
with its history; a pair's agreed or adjudicated label is its manual judgment (export it
with `recallbench labels export`); pairwise choices go to pairwise_preferences.
""",
)
@store_option
@workspace_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port; the URL says which).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    metavar="TOKEN",
    help=f"The access token (or ${TOKEN_ENV}; default: a new one, printed at start).",
)
@click.option(
    "--annotator",
    metavar="NAME",
    help="Who labels (stored with each label); the annotation pages can change it.",
)
@click.option(
    "--dataset",
    "dataset_spec",
    metavar="NAME|PATH",
    help="Also queue this dataset's pairs for labelling (with its memories' texts) and show "
    "its query texts beside runs made on it.",
)
@click.option(
    "--pool",
    "pool_runs",
    type=int,
    multiple=True,
    metavar="RUN_ID",
    help="Also queue the judging pool of this stored run (repeatable): the first "
    "--pool-depth results of each run that the --dataset does not judge; /pool shows the "
    "progress. Needs --dataset, the dataset the runs were made on.",
)
@click.option(
    "--pool-depth",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="N",
    help="How many of each pooled run's first results enter the pool.",
)
@click.option(
    "--pool-order",
    type=click.Choice(["depth", "disagreement"]),
    default="depth",
    show_default=True,
    help="Which pooled pairs come first: best rank, then most runs (depth); or those "
    "whose label can move the difference between the runs most (disagreement).",
)
@click.option(
    "--labels-per-pair",
    type=click.IntRange(1, 20),
    default=1,
    show_default=True,
    metavar="N",
    help="Annotators who label each pair before it leaves everyone's queue (2 or more: "
    "overlap, so that the Agreement page measures people against each other and conflicts "
    "go to /adjudicate).",
)
@reports_errors
def serve(
    store_url: str | None,
    workspace: str,
    port: int,
    token: str | None,
    annotator: str | None,
    dataset_spec: str | None,
    pool_runs: tuple[int, ...],
    pool_depth: int,
    pool_order: PoolOrder,
    labels_per_pair: int,
) -> None:
    """Serve a local dashboard over the history and telemetry store: runs, trends,
    comparisons, telemetry and an annotation queue."""
    import uvicorn

    from recallbench.core import ConfigError
    from recallbench.online._guard import new_token
    from recallbench.serve import Dashboard
    from recallbench.store import open_store

    if token is not None and not token.strip():
        raise ConfigError(f"the token (--token or ${TOKEN_ENV}) must not be empty")
    if token is not None and not TOKEN_CHARACTERS.fullmatch(token.strip()):
        # it travels in a URL and a cookie: other characters would need escaping in both
        raise ConfigError(
            f"the token (--token or ${TOKEN_ENV}) may hold letters, digits and . _ ~ - only"
        )
    if not pool_runs and _given("pool_depth", "pool_order"):
        raise ConfigError("--pool-depth and --pool-order apply with --pool RUN_ID only")
    dataset = None
    if dataset_spec is not None:
        from recallbench.datasets import load_dataset

        dataset = load_dataset(dataset_spec)
    token = token.strip() if token else new_token()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((HOST, port))  # bound here: a taken port is a message, port 0 a choice
    except OSError as error:
        listener.close()
        raise ConfigError(f"--port {port}: cannot listen on {HOST}:{port}: {error}") from None
    bound = listener.getsockname()[1]
    with listener, open_store(store_url, workspace) as store:  # a refused store closes it
        pool = None
        if pool_runs:
            from recallbench.serve._pool import stored_pool

            pool = stored_pool(store, pool_runs, dataset, pool_depth, pool_order)
        dashboard = Dashboard(
            store,
            token,
            annotator=annotator,
            dataset=dataset,
            labels_per_pair=labels_per_pair,
            sources=[pool] if pool is not None else [],
        )
        config = uvicorn.Config(dashboard.app, log_level="warning", timeout_graceful_shutdown=2)
        url = f"http://{HOST}:{bound}/"
        print(
            f"recallbench serve: {store.url} (workspace {store.workspace!r})\n"
            f"  open {url}?token={token}\n  stop with Ctrl-C",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.Server(config).run(sockets=[listener])


def _given(*names: str) -> bool:
    """Whether any of these options was given on the command line (not its default)."""
    context = click.get_current_context()
    return any(
        context.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        for name in names
    )
