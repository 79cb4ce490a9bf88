"""`recallbench power`: how many queries a comparison needs, or what a set can detect."""

from __future__ import annotations

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._run import make_console
from recallbench.core import ConfigError
from recallbench.stats._power import minimum_detectable_effect, sample_size

UNIT = click.FloatRange(0, 1, min_open=True, max_open=True)


@click.command(
    epilog="""\b
Examples:
  recallbench power --delta 0.05 --sd 0.15          # queries needed
  recallbench power --delta 0.02 --sd 0.15 --power 0.9
  recallbench power --queries 200 --sd 0.15         # smallest detectable difference
The sd is that of the per-query differences between two systems (`recallbench compare`
reports it through d_z = mean / sd); 0.15 is typical for MRR and nDCG@10.
"""
)
@click.option("--delta", type=float, help="Mean difference to detect (e.g. 0.05 nDCG).")
@click.option(
    "--sd", type=float, required=True, help="Standard deviation of the per-query differences."
)
@click.option("--queries", type=click.IntRange(min=2), help="Number of queries (gives the MDE).")
@click.option("--alpha", type=UNIT, default=0.05, show_default=True, help="Significance level.")
@click.option("--power", type=UNIT, default=0.8, show_default=True, help="Power wanted.")
@click.option("--one-sided", is_flag=True, help="A one-sided test (default: two-sided).")
@reports_errors
def power(
    delta: float | None,
    sd: float,
    queries: int | None,
    alpha: float,
    power: float,
    one_sided: bool,
) -> None:
    """Sample size of a paired comparison (exact power of the paired t-test).

    Give --delta for the number of queries needed, or --queries for the minimum
    detectable effect.
    """
    if sd <= 0:
        raise ConfigError(f"--sd must be positive, got {sd}")
    console = make_console()
    sides = "one-sided" if one_sided else "two-sided"
    if queries is not None and delta is None:
        mde = minimum_detectable_effect(queries, sd, alpha, power, two_sided=not one_sided)
        console.print(
            f"{queries} queries detect a mean difference of {mde:.4f} "
            f"(power {power}, {sides} α {alpha}, sd {sd}; exact paired t-test)",
            highlight=False,
        )
    elif delta is not None and queries is None:
        needed = sample_size(delta, sd, alpha, power, two_sided=not one_sided)
        console.print(f"[bold]{needed.queries} queries[/bold]", highlight=False)
        console.print(
            f"to detect a mean difference of {delta} with power {power} at {sides} α {alpha} "
            f"when the per-query differences have sd {sd} (paired t-test, exact noncentral "
            f"t): power {needed.achieved_power:.4f} at {needed.queries} queries, "
            f"{needed.power_with_one_fewer:.4f} at {needed.queries - 1}. "
            f"The normal approximation says {needed.normal_approximation}.",
            highlight=False,
        )
    else:
        raise ConfigError("give either --delta (queries needed) or --queries (detectable effect)")
