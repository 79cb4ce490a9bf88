"""Views of reports, comparisons and leaderboards for people: the self-contained HTML
pages (report.html, comparison.html, leaderboard.html), Markdown (report.md,
comparison.md, leaderboard.md), the terminal tables (those of shadow tests and feature
flags too), and the writing of a run's output files that need them.

The layer's rule: ``render`` sits above the models it shows. It may import
:mod:`recallbench.report` (the report model, its building and reading),
:mod:`recallbench.compare` (the comparison model and its statistics),
:mod:`recallbench.online` (shadow tests and their status) and anything below them;
nothing in those packages, or below them, imports ``render``. Only the command line
(:mod:`recallbench.cli`) and the dashboard (:mod:`recallbench.serve`) import it. A view
computes nothing a model needs: what a JSON file holds is made by the model's package.
"""

from recallbench.render._comparison import render_comparison, render_comparison_markdown
from recallbench.render._markdown import render_markdown
from recallbench.render._terminal import render_terminal
from recallbench.render._write import write_outputs

__all__ = [
    "render_comparison",
    "render_comparison_markdown",
    "render_markdown",
    "render_terminal",
    "write_outputs",
]
