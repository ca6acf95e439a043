"""Build the compiled modules hamisim._core, _replay, ... (everything else is in pyproject.toml)."""
import os

import shutil
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class build_py_with_workloads(build_py):
    """Ship the top-level workloads/ folder inside the package (hamisim/workloads),
    so `hamisim run` finds the bundled data after a plain `pip install .`."""

    def run(self):
        super().run()
        src = HERE / "workloads"
        dst = Path(self.build_lib) / "hamisim" / "workloads"
        if src.is_dir():
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)

# HAMISIM_DEBUG=1 builds the kernel with bounds checking, for debugging.
DEBUG = os.environ.get("HAMISIM_DEBUG") == "1"

#: The compiled modules (hamisim/<name>.pyx each; they cimport one another
#: through their .pxd files, see docs/DESIGN.md §1).
MODULES = ("_core", "_gosort", "_memo", "_failtext", "_meter", "_research", "_replay",
           # standalone: the OpenMetrics writer's line assembly (studies/openmetrics.py)
           "_openmetrics")

extensions = [
    Extension(
        f"hamisim.{name}",
        [f"hamisim/{name}.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        # HAMi's scores are float32 computed op by op: forbid fused multiply-add
        # contraction so C rounds exactly like Go on amd64.
        extra_compile_args=["-O2", "-ffp-contract=off"],
    )
    for name in MODULES
]

setup(
    cmdclass={"build_py": build_py_with_workloads},
    ext_modules=cythonize(
        extensions,
        # cimports name the package (from hamisim._core cimport Core): the
        # .pxd files are found from the project root
        include_path=[str(HERE)],
        compiler_directives={
            "language_level": "3",
            "boundscheck": DEBUG,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": DEBUG,
        },
    )
)
