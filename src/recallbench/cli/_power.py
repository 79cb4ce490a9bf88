"""`recallbench power`: how many queries a comparison needs, or what a set can detect."""

from __future__ import annotations

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._types import POSITIVE, UNIT
from recallbench.core import ConfigError
from recallbench.stats._attainable import (
    PAIRED_TESTS,
    TEST_NAMES,
    PairedTest,
    queries_to_reach,
    smallest_pvalue,
)
from recallbench.stats._power import minimum_detectable_effect, sample_size


@click.command(
    epilog="""\b
Examples:
  recallbench power --delta 0.05 --sd 0.15          # queries needed
  recallbench power --delta 0.02 --sd 0.15 --power 0.9
  recallbench power --delta 0.05 --sd 0.15 --comparisons 8   # 8 measures, Holm
  recallbench power --queries 200 --sd 0.15         # smallest detectable difference
The sd is that of the per-query differences between two systems (`recallbench compare`
reports it through d_z = mean / sd); 0.15 is typical for MRR and nDCG@10.
"""
)
@click.option("--delta", type=POSITIVE, help="Mean difference to detect (e.g. 0.05 nDCG).")
@click.option(
    "--sd", type=POSITIVE, required=True, help="Standard deviation of the per-query differences."
)
@click.option("--queries", type=click.IntRange(min=2), help="Number of queries (gives the MDE).")
@click.option("--alpha", type=UNIT, default=0.05, show_default=True, help="Significance level.")
@click.option("--power", type=UNIT, default=0.8, show_default=True, help="Power wanted.")
@click.option("--one-sided", is_flag=True, help="A one-sided test (default: two-sided).")
@click.option(
    "--test",
    type=click.Choice(PAIRED_TESTS),
    default="randomisation",
    show_default=True,
    help="The test the comparison will use (compare's verdicts use randomisation).",
)
@click.option(
    "--comparisons",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Comparisons corrected together (systems x measures): planned at alpha / this.",
)
@reports_errors
def power(
    delta: float | None,
    sd: float,
    queries: int | None,
    alpha: float,
    power: float,
    one_sided: bool,
    test: PairedTest,
    comparisons: int,
) -> None:
    """Sample size of a paired comparison (exact power of the paired t-test).

    Give --delta for the number of queries needed, or --queries for the minimum
    detectable effect. With --comparisons m the level is alpha / m, a conservative bound
    for Holm, Benjamini-Hochberg and Westfall-Young; the randomisation and Wilcoxon tests
    also need enough queries for their smallest possible p-value to fall below it.
    """
    console = make_console()
    sides = "one-sided" if one_sided else "two-sided"
    level = alpha / comparisons
    family = (
        f"α {alpha}/{comparisons} = {level:.4g} per comparison (Bonferroni bound for a "
        f"corrected family of {comparisons}: conservative for Holm, BH and Westfall-Young)"
        if comparisons > 1
        else f"α {alpha}"
    )
    floor = queries_to_reach(level if not one_sided else 2 * level, test)
    if queries is not None and delta is None:
        mde = minimum_detectable_effect(queries, sd, level, power, two_sided=not one_sided)
        shown = "not computable" if mde is None else f"{mde:.4f}"
        console.print(
            f"{queries} queries detect a mean difference of {shown} "
            f"(power {power}, {sides} {family}, sd {sd}; exact paired t-test)",
            highlight=False,
        )
        if queries < floor:
            smallest = smallest_pvalue(test, queries) / (1 if not one_sided else 2)
            console.print(
                f"[bold]but the {TEST_NAMES[test]} can never reach {level:.4g} with {queries} "
                f"queries[/bold]: its smallest p is {smallest:.4g}; it needs at least {floor} "
                "queries whose values differ",
                highlight=False,
            )
    elif delta is not None and queries is None:
        needed = sample_size(
            delta, sd, alpha, power, two_sided=not one_sided, test=test, comparisons=comparisons
        )
        console.print(
            f"[bold]{needed.queries} queries[/bold] for the {TEST_NAMES[test]}", highlight=False
        )
        raised = needed.queries > needed.t_test_queries
        one_fewer = "" if raised else f", {needed.power_with_one_fewer:.4f} at {needed.queries - 1}"
        console.print(
            f"to detect a mean difference of {delta} with power {power} at {sides} {family} "
            f"when the per-query differences have sd {sd} (power of the paired t-test, exact "
            f"noncentral t): power {needed.achieved_power:.4f} at {needed.queries} "
            f"queries{one_fewer}. The normal approximation says {needed.normal_approximation}.",
            highlight=False,
        )
        if raised:
            console.print(
                f"The t-test alone would need {needed.t_test_queries}, but with fewer than "
                f"{needed.floor} queries whose values differ the {TEST_NAMES[test]} cannot "
                f"give p < {level:.4g} (its smallest two-sided p is 2/2^n); near that floor "
                "its power is below the t-test's, so allow a few more.",
                highlight=False,
            )
        elif test != "t":
            console.print(
                f"The {TEST_NAMES[test]} has about the t-test's power at this n; it can reach "
                f"{level:.4g} from {needed.floor} queries whose values differ.",
                highlight=False,
            )
    else:
        raise ConfigError("give either --delta (queries needed) or --queries (detectable effect)")
