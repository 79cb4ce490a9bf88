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

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
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

# names are imported on first use (PEP 562): a run's files need no comparison view
__getattr__ = lazy_exports(__name__, ("_write", "_terminal", "_markdown", "_comparison"), __all__)
