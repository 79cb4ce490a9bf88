"""The one compiled module, recallbench._ctrec (everything else is in pyproject.toml).

It is optional: where no C compiler is found the install still succeeds, and evaluations
take the pure-Python engine, with the same results, more slowly."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "recallbench._ctrec",
            [
                "src/recallbench/_ctrec.c",
                "src/recallbench/_ctrec_measures.c",
                "src/recallbench/_ctrec_files.c",
            ],
            depends=["src/recallbench/_ctrec.h"],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
