"""The architecture holds: no two files of the package import each other in a circle.

The layers (which package may import which) are import-linter contracts in pyproject.toml,
checked by ``make test`` (``lint-imports``). A circle between files is a finer thing the
contracts cannot see (two files of one package), so it is checked here on the import graph
import-linter reads (grimp), with type-only imports counted too: a circle of types is
still two concepts that do not know which of them comes first.
"""

from __future__ import annotations

from collections.abc import Iterable

import grimp
import pytest


def circles(graph: grimp.ImportGraph, modules: Iterable[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan 1972), each a
    set of files that import each other, directly or through the others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        # iterative depth-first search: the graph is deep enough to exhaust recursion
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.x", "a.y", "a.z", "a.w"):
        graph.add_module(name)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.z")
    graph.add_import(importer="a.z", imported="a.x")
    graph.add_import(importer="a.w", imported="a.x")
    assert circles(graph, graph.modules) == [["a.x", "a.y", "a.z"]]
    graph.remove_import(importer="a.z", imported="a.x")
    assert circles(graph, graph.modules) == []


@pytest.mark.parametrize("type_only", [False, True], ids=["runtime", "with-type-only"])
def test_no_file_imports_itself_through_others(type_only: bool) -> None:
    graph = grimp.build_graph(
        "recallbench", exclude_type_checking_imports=not type_only, cache_dir=None
    )
    assert circles(graph, graph.modules) == []
