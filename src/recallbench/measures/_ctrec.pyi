"""Types of the compiled module built from _ctrec.c (see recallbench.measures._trec_native)."""

Family = tuple[int, tuple[float, ...], tuple[str, ...]]

def evaluate_files(
    qrels: str,
    run: str,
    families: list[Family],
    level: int,
    max_docs: int,
    judged_only: bool,
    complete: bool,
    per_query: bool,
    summary: bool,
    runid: bool,
    block: int,
    /,
) -> tuple[str, str] | tuple[int, str] | None: ...
def evaluate_file_values(
    qrels: str,
    run: str,
    families: list[Family],
    level: int,
    max_docs: int,
    judged_only: bool,
    complete: bool,
    block: int,
    /,
) -> (
    tuple[list[str], list[list[float]], list[bool], list[int], int, str] | tuple[int, str] | None
): ...
def evaluate_dicts(
    qrels: dict[object, object],
    run: dict[object, object],
    families: list[Family],
    level: int,
    max_docs: int,
    judged_only: bool,
    complete: bool,
    /,
) -> tuple[list[str], list[list[float]], list[bool], list[int], int] | None: ...
def read_qrels(path: str, /) -> dict[str, dict[str, int]] | None: ...
def read_run(
    path: str, offset: int = 0, length: int = 0, /
) -> tuple[list[str], list[list[str]], list[list[float]], str] | None: ...
def run_groups(path: str, block: int, /) -> list[int] | tuple[int, str] | None: ...
