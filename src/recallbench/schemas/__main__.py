"""Regenerate the shipped JSON Schema files from the models."""

from recallbench.core._files import atomic_write_text
from recallbench.schemas import FORMATS, render, schema_path

for stem in FORMATS:
    atomic_write_text(schema_path(stem), render(stem))
    print(f"wrote {schema_path(stem)}")
