"""The one compiled module, recallbench.measures._ctrec, trec_eval's engine (everything else is in pyproject.toml).

It is optional: where no C compiler is found the install still succeeds, and evaluations
take the pure-Python engine, with the same results, more slowly."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "recallbench.measures._ctrec",
            [
                "src/recallbench/measures/_ctrec.c",
                "src/recallbench/measures/_ctrec_measures.c",
                "src/recallbench/measures/_ctrec_all_trec.c",
                "src/recallbench/measures/_ctrec_files.c",
                "src/recallbench/measures/_ctrec_read.c",
            ],
            depends=[
                "src/recallbench/measures/_ctrec.h",
                "src/recallbench/measures/_ctrec_res_rels.h",
            ],
            extra_compile_args=["-O2", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
