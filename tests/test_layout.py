"""The package's architecture, as rules on its imports (README "What is here", DESIGN §1).

Every import in ``hamisim/`` counts, at module level or inside a function, so
a lazy import cannot hide a dependency. The rules: no module imports another
that imports it back (directly or through others); each part imports only the
parts below it; and third-party libraries stay where they belong (SimPy in the
engine, matplotlib in the figures, files in ``io/``).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "hamisim"
#: The compiled modules (hamisim/_core.pyx, _replay.pyx, ...): the part "core".
COMPILED = {f"hamisim.{p.stem}" for p in PACKAGE.glob("*.pyx")}
#: compiled modules outside the kernel's part: the OpenMetrics line assembly
COMPILED_HELPERS = {"hamisim._openmetrics": "studies"}

#: Parts of the package and the parts each may import (besides itself).
MODEL = {"hamisim.errors", "hamisim.cluster", "hamisim.pods", "hamisim.shapes", "hamisim.topology",
         "hamisim.mig", "hamisim.devices", "hamisim._version",
         "hamisim.workload", "hamisim.registry"}
ALLOWED = {
    "model": {"model"},
    "kube": {"model"},
    "hami": {"model", "kube"},
    "research": {"model", "kube", "hami", "core"},
    "io": {"model", "kube", "hami"},
    "sim": {"model", "kube", "hami", "research", "core"},
    "studies": {"model", "kube", "hami", "research", "io", "sim", "plots"},
    "plots": {"model"},
    "explain": {"model", "kube", "hami", "research", "io", "sim", "studies"},
    "cli": {"model", "kube", "hami", "research", "io", "sim", "studies", "plots", "explain",
            "package"},
    "package": {"model", "kube", "hami", "sim"},       # __init__: the eager part of the API
}
#: Third-party libraries each part must not import.
FORBIDDEN_LIBRARIES = {
    "model": {"simpy", "pandas", "matplotlib", "yaml", "pyarrow", "dask"},
    "kube": {"simpy", "pandas", "matplotlib", "yaml", "pyarrow", "dask", "numpy"},
    "hami": {"simpy", "pandas", "matplotlib", "yaml", "pyarrow", "dask"},
    "research": {"simpy", "pandas", "matplotlib", "yaml", "pyarrow", "dask"},
    "io": {"simpy", "matplotlib", "dask"},
    # sim/ builds its tables as Arrow batches in memory (the recorder); writing
    # them to files is io/'s (hamisim.io.outputs)
    "sim": {"matplotlib", "yaml", "dask"},
}


def part_of(module: str) -> str:
    # hamisim.devices is a subpackage of the model: one module per device family
    if module in MODEL or module.startswith("hamisim.devices."):
        return "model"
    if module == "hamisim":
        return "package"
    if module in COMPILED:
        # the standalone compiled helper of a study belongs to its part
        return COMPILED_HELPERS.get(module, "core")
    return module.split(".")[1]


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(hamisim modules, top-level third-party or stdlib packages) ``name`` imports."""
    ours, theirs = set(), set()
    root = False
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{a.name}" for a in node.names]
            if target == "hamisim" and any(f"hamisim.{a.name}" not in known | COMPILED
                                           for a in node.names):
                # a name of the package root's API (`from hamisim import
                # __version__`) runs hamisim/__init__.py, which loads the backends
                root = True
        else:
            continue
        for t in targets:
            if t in known or t in COMPILED:
                ours.add(t)
            elif not t.startswith("hamisim"):
                theirs.add(t.split(".")[0])
    ours.discard(name)
    # importing a parent package (hamisim, hamisim.io) is not a dependency on its modules
    ours = {t for t in ours if not name.startswith(t + ".") and t != "hamisim"}
    return ours | ({"hamisim"} if root else set()), theirs


MODULES = modules()
GRAPH = {m: imports_of(m, p, set(MODULES)) for m, p in MODULES.items()}


def test_the_rules_cover_every_module():
    assert {part_of(m) for m in MODULES} <= set(ALLOWED) | {"core"}
    # the layout the README describes: subpackages by concept, none crowded
    folders: dict[Path, int] = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            folders[path.parent] = folders.get(path.parent, 0) + 1
    assert set(folders) == {PACKAGE} | {PACKAGE / d for d in
                                        ("devices", "hami", "io", "kube", "research", "sim",
                                         "studies")}
    # (13: io/ holds every reader and writer; the audit log reader made it 13)
    assert max(folders.values()) <= 13, folders


def test_no_import_circles():
    """Depth-first search for a path from a module back to itself."""
    state: dict[str, int] = {}          # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(GRAPH[m][0]):
            if t not in GRAPH:
                continue
            if state.get(t) == 1:
                cycle = path[path.index(t):] + [t]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)



def cimports_of(module: str) -> set[str]:
    """The compiled modules ``module`` loads at import: every module whose
    declarations its .pyx or .pxd cimports (a .pxd without a .pyx, such as
    _codes.pxd, holds declarations only and loads nothing)."""
    stem = module.split(".")[1]
    found = set()
    for path in (PACKAGE / f"{stem}.pyx", PACKAGE / f"{stem}.pxd"):
        if path.exists():
            found |= set(re.findall(r"^\s*from (hamisim\._\w+) cimport", path.read_text(
                encoding="utf-8"), re.MULTILINE))
    return (found & COMPILED) - {module}


def test_the_compiled_modules_form_no_import_circle():
    """A cimported cdef class or function loads its module when the cimporting
    one is imported: the modules must be importable in some order."""
    assert "hamisim._core" in COMPILED and len(COMPILED) > 1
    graph = {m: cimports_of(m) for m in COMPILED}
    assert graph["hamisim._replay"] >= {"hamisim._core", "hamisim._meter",
                                        "hamisim._failtext"}
    done: list[str] = []
    while len(done) < len(graph):
        ready = sorted(m for m in graph if m not in done and graph[m] <= set(done))
        assert ready, f"import circle among {sorted(set(graph) - set(done))}"
        done += ready


@pytest.mark.parametrize("module", sorted(COMPILED))
def test_each_compiled_module_has_the_stub_of_its_classes(module):
    """hamisim/<module>.pyi declares exactly the classes the built module defines
    (a module without classes, such as _gosort, needs no stub; one with Python
    functions, such as _openmetrics, has one declaring no class)."""
    import importlib
    built = importlib.import_module(module)
    classes = {name for name, value in vars(built).items()
               if isinstance(value, type) and value.__module__ == module}
    stub = PACKAGE / f"{module.split('.')[1]}.pyi"
    if not classes and not stub.exists():
        return
    declared = {node.name for node in ast.parse(stub.read_text(encoding="utf-8")).body
                if isinstance(node, ast.ClassDef)}
    assert declared == classes

@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_part_imports_only_the_parts_below_it(module):
    part = part_of(module)
    bad = sorted(t for t in GRAPH[module][0]
                 if part_of(t) != part and part_of(t) not in ALLOWED[part])
    assert not bad, f"{module} ({part}/) must not import {bad}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_libraries_stay_where_they_belong(module):
    bad = sorted(GRAPH[module][1] & FORBIDDEN_LIBRARIES.get(part_of(module), set()))
    assert not bad, f"{module} ({part_of(module)}/) must not import {bad}"


def test_the_rules_catch_a_violation(tmp_path):
    """The checker itself: a lazy import inside a function is seen."""
    source = tmp_path / "engine.py"
    source.write_text("def f():\n    from hamisim.io import traces\n    import matplotlib\n")
    ours, theirs = imports_of("hamisim.sim.engine", source, set(MODULES))
    assert "hamisim.io.traces" in ours and "matplotlib" in theirs


def test_a_name_from_the_package_root_counts_as_importing_it(tmp_path):
    """`from hamisim import __version__` runs the root's imports (the backends):
    a part below the root names the version from hamisim._version instead."""
    source = tmp_path / "kubeimport.py"
    source.write_text("from hamisim import __version__\nfrom hamisim import _core\n")
    ours, _ = imports_of("hamisim.io.kubeimport", source, set(MODULES))
    assert "hamisim" in ours
    source.write_text("from hamisim._version import __version__\nfrom hamisim.io import traces\n")
    ours, _ = imports_of("hamisim.io.kubeimport", source, set(MODULES))
    assert "hamisim" not in ours


def test_hypothesis_keeps_its_files_outside_the_checkout():
    from hypothesis import settings
    from hypothesis.configuration import storage_directory
    from hypothesis.database import DirectoryBasedExampleDatabase
    root = Path(__file__).resolve().parent.parent
    db = settings().database
    assert isinstance(db, DirectoryBasedExampleDatabase)
    assert not Path(db.path).resolve().is_relative_to(root)
    assert not Path(storage_directory("constants").path).resolve().is_relative_to(root)


def module_patches(source: str) -> list[str]:
    """Assignments in a test file to an attribute of a module it imported
    (``clusterfile.MAX_NODES = 10``): such a patch outlives the test and
    changes every test after it; ``monkeypatch.setattr`` undoes itself."""
    tree = ast.parse(source)
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "hamisim":
            # `from hamisim.io import clusterfile`: names that may be modules
            modules.update(a.asname or a.name for a in node.names)
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            base = t
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(t, ast.Attribute) and isinstance(base, ast.Name) and \
                    base.id in modules:
                found.append(f"line {node.lineno}: {ast.unparse(t)}")
    return found


def test_no_test_patches_a_module_for_good():
    tests = Path(__file__).resolve().parent
    found = {p.name: hits for p in sorted(tests.glob("*.py"))
             if (hits := module_patches(p.read_text()))}
    assert found == {}


def test_the_patch_rule_catches_a_patch():
    assert module_patches("from hamisim.io import clusterfile\nclusterfile.MAX_NODES = 3\n") \
        == ["line 2: clusterfile.MAX_NODES"]
    assert module_patches("import hamisim.kube.queue\nhamisim.kube.queue.X = 1\n") \
        == ["line 2: hamisim.kube.queue.X"]
    assert module_patches("import pytest\ndef t(monkeypatch):\n"
                          "    monkeypatch.setattr('a.b', 1)\n") == []
