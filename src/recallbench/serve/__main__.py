"""``python -m recallbench.serve``: the ``recallbench serve`` command."""

from recallbench.cli._serve import serve

if __name__ == "__main__":
    serve(prog_name="recallbench serve")
