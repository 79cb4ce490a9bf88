"""Answer-level measures of memory systems.

Public names are imported on first use (PEP 562), so importing one module of this
package loads no other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.qa._lexical import (
        ABSTENTION_PHRASES,
        LOCOMO_CATEGORIES,
        abstained,
        answer_tokens,
        bleu1,
        bleu_tokens,
        lexical_rules,
        locomo_f1,
        multi_answer_f1,
        normalize_answer,
        token_f1,
    )

__all__ = [
    "ABSTENTION_PHRASES",
    "LOCOMO_CATEGORIES",
    "abstained",
    "answer_tokens",
    "bleu1",
    "bleu_tokens",
    "lexical_rules",
    "locomo_f1",
    "multi_answer_f1",
    "normalize_answer",
    "token_f1",
]

__getattr__ = lazy_exports(__name__, ("_lexical",), __all__)
