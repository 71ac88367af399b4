"""Imports point inward: the layering rules of ../shared/ARCHITECTURE.md, checked on the source.

Every ``.py`` file of ``service/`` and ``workers/`` is parsed with :mod:`ast`; every import counts,
wherever it is (module top, inside a function, under ``if TYPE_CHECKING``), and so does
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name. A failure names
the file, the line and the forbidden import.

  (a) the core (service.metrics, service.formats) imports only the standard library, numpy,
      scipy, service.errors and the core itself (the ir_metadata reader also PyYAML and jsonschema);
  (b) the store never imports the web layer, the use cases, the CLI, the workers, Litestar or Celery;
  (c) the web layer (service.api, service.portal, service.http) never imports the workers or Celery;
  (d) the use cases (service.evaluation) never import the web layer, the CLI, the workers or Litestar;
  (e) the workers never import the web layer or Litestar;
  (f) only the composition root (service.asgi) imports both the web layer and the workers;
  (g) the CLI's modules import only the standard library, numpy, service.errors, the free-text
      rule (service.formats.text) and the CLI at their top (the rest inside handlers), so
      ``cranfield eval`` starts fast.
  (h) the remote client (service.client) speaks only HTTP: it imports the standard library,
      httpx, service.errors and itself; ``cranfield remote`` (service.cli.remote) adds only the
      CLI and the settings (service.config), never the service's use cases, store or web layer.
  (i) the rooms of the use cases (the folders of service.evaluation) have a direction: each
      imports only the rooms below it in ``ROOMS``, so no two rooms import each other.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("service", "workers")

CORE = ("service.metrics", "service.formats")
WEB = ("service.api", "service.portal", "service.http")
COMPOSITION_ROOT = "service.asgi"


@dataclass(frozen=True)
class Import:
    """One import statement: ``module`` absolute (relative imports resolved); ``names`` the
    names a ``from`` import takes from it (each may be a submodule); ``top`` whether it runs
    when the importing module is imported (not inside a function)."""

    path: str
    line: int
    module: str
    names: tuple[str, ...] = ()
    top: bool = True

    def targets(self) -> tuple[str, ...]:
        """What may be imported: the module, and ``module.name`` for each name of a ``from``
        import (``from service import api`` imports ``service.api``)."""
        return (self.module, *(f"{self.module}.{n}" for n in self.names if n != "*"))

    def shown(self) -> str:
        return f"from {self.module} import {', '.join(self.names)}" if self.names else f"import {self.module}"


def within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, path: str) -> None:
        self.package = module.split(".") if is_package else module.split(".")[:-1]
        self.path = path
        self.depth = 0  # > 0 inside a function
        self.found: list[Import] = []

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # noqa: N815

    def visit_Import(self, node: ast.Import) -> None:  # noqa: N802
        for alias in node.names:
            self.found.append(Import(self.path, node.lineno, alias.name, top=self.depth == 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # noqa: N802
        if node.level:
            base = self.package[: len(self.package) - (node.level - 1)] if node.level > 1 else self.package
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        self.found.append(Import(self.path, node.lineno, module, tuple(a.name for a in node.names),
                                 top=self.depth == 0))

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if (name in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            self.found.append(Import(self.path, node.lineno, node.args[0].value, top=self.depth == 0))
        self.generic_visit(node)


def imports_in(source: str, module: str, path: str, is_package: bool = False) -> list[Import]:
    collector = _Collector(module, is_package, path)
    collector.visit(ast.parse(source, filename=path))
    return collector.found


@cache
def project() -> dict[str, list[Import]]:
    """{module name: its imports} for every .py file under service/ and workers/."""
    modules: dict[str, list[Import]] = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            rel = str(path.relative_to(REPO))
            name = module_name(path)
            modules[name] = imports_in(path.read_text(encoding="utf-8"), name, rel, path.name == "__init__.py")
    return modules


def layer(prefixes: Iterable[str]) -> Iterator[Import]:
    prefixes = tuple(prefixes)
    for module, imports in project().items():
        if within(module, prefixes):
            yield from imports


# ---------------------------------------------------------------------------- the checks
def forbidden(imports: Iterable[Import], banned: Iterable[str]) -> list[str]:
    """A message for each import of a module under one of ``banned``."""
    banned = tuple(banned)
    problems = []
    for imp in imports:
        hits = sorted({b for t in imp.targets() for b in banned if within(t, (b,))})
        if hits:
            problems.append(f"{imp.path}:{imp.line}: `{imp.shown()}` imports {', '.join(hits)} (forbidden here)")
    return problems


def outside(imports: Iterable[Import], allowed: Iterable[str], stdlib: bool = True) -> list[str]:
    """A message for each import of a module that is neither in the standard library (if
    ``stdlib``) nor under one of ``allowed``."""
    allowed = tuple(allowed)

    def ok(name: str) -> bool:
        return within(name, allowed) or (stdlib and name.split(".")[0] in sys.stdlib_module_names)

    problems = []
    for imp in imports:
        # `from service import errors` is fine although `service` alone is not allowed
        if not (ok(imp.module) or (imp.names and all(ok(t) for t in imp.targets()[1:]))):
            problems.append(f"{imp.path}:{imp.line}: `{imp.shown()}` imports {imp.module}, which is not allowed "
                            f"here (only the standard library and {', '.join(allowed)})")
    return problems


RULES = {
    "store": (("service.store",), (*WEB, "service.evaluation", "service.cli", COMPOSITION_ROOT, "workers",
                                   "litestar", "celery")),
    "web": (WEB, ("workers", "celery")),
    "evaluation": (("service.evaluation",), (*WEB, "service.cli", COMPOSITION_ROOT, "workers", "litestar")),
    "workers": (("workers",), (*WEB, COMPOSITION_ROOT, "litestar")),
}


def test_every_layer_has_files() -> None:
    """The rules below look at something (a renamed package would make them pass vacuously)."""
    modules = project()
    for prefix in (*CORE, "service.store", *WEB[:2], "service.evaluation", "service.cli", "workers"):
        assert any(within(m, (prefix,)) for m in modules), f"no module under {prefix}"
    assert COMPOSITION_ROOT in modules
    assert sum(len(v) for v in modules.values()) > 200  # imports seen, functions' included


#: Core modules that read a text format with a pure parser (no I/O, no database, no HTTP): the
#: ir_metadata reader uses PyYAML's safe loader and jsonschema (docs/decisions.md).
CORE_PARSERS = {"service.formats.ir_metadata": ("yaml", "jsonschema")}


def test_core_imports_only_the_standard_library_numpy_scipy_and_itself() -> None:
    problems = []
    for module, imports in project().items():
        if within(module, CORE):
            problems += outside(imports, (*CORE, "service.errors", "numpy", "scipy", *CORE_PARSERS.get(module, ())))
    assert not problems, "\n".join(problems)
    assert all(m in project() for m in CORE_PARSERS)  # the exception names a module that exists


@pytest.mark.parametrize("rule", sorted(RULES))
def test_layer_never_imports_outer_layers(rule: str) -> None:
    prefixes, banned = RULES[rule]
    problems = forbidden(layer(prefixes), banned)
    assert not problems, "\n".join(problems)


def test_only_the_composition_root_imports_both_the_web_layer_and_the_workers() -> None:
    both = []
    for module, imports in project().items():
        web = forbidden(imports, (*WEB, "litestar"))
        workers = forbidden(imports, ("workers",))
        if web and workers and module != COMPOSITION_ROOT:
            both.append(f"{module} imports the web layer ({web[0]}) and the workers ({workers[0]})")
    assert not both, "\n".join(both)
    root = project()[COMPOSITION_ROOT]
    assert forbidden(root, WEB) and forbidden(root, ("workers",)), "service.asgi no longer wires the two"


def test_cli_modules_import_only_light_modules_at_their_top() -> None:
    top = [imp for imp in layer(("service.cli",)) if imp.top]
    # service.formats.text: the free-text rule (standard library only), which every line printed obeys
    problems = outside(top, ("service.cli", "service.errors", "service.formats.text", "numpy"))
    assert not problems, "\n".join(problems)


CLIENT = "service.client"
REMOTE_CLI = "service.cli.remote"


def test_the_remote_client_speaks_only_http() -> None:
    modules = project()
    assert any(within(m, (CLIENT,)) for m in modules) and REMOTE_CLI in modules
    problems = outside(layer((CLIENT,)), (CLIENT, "service.errors", "httpx"))
    # every import of the remote commands, their handlers' included
    problems += outside(modules[REMOTE_CLI], (CLIENT, "service.cli", "service.errors", "service.config"))
    assert not problems, "\n".join(problems)


def defined_names(module: str) -> set[str] | None:
    """The names a project module binds at its top (None if there is no such module), read
    from its source: nothing is imported (importing ``workers`` would start a Celery app)."""
    base = REPO.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.is_file():
        return None
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def test_the_clis_deferred_imports_resolve() -> None:
    """The CLI imports the service inside its handlers: a use case moved elsewhere must fail
    here, not only when someone runs the command."""
    missing = []
    for imp in layer(("service.cli",)):
        if not within(imp.module, ("service", "workers")):
            continue
        names = defined_names(imp.module)
        if names is None:
            missing.append(f"{imp.path}:{imp.line}: `{imp.shown()}`: no module {imp.module}")
            continue
        for name in imp.names:
            if name not in names and defined_names(f"{imp.module}.{name}") is None:
                missing.append(f"{imp.path}:{imp.line}: `{imp.shown()}`: {imp.module} has no {name}")
    assert not missing, "\n".join(missing)


# ------------------------------------------------------------------ the checker itself
def test_checker_reports_a_forbidden_import_with_file_and_line() -> None:
    """Synthetic sources the rules must refuse: the checks cannot pass for want of looking."""
    source = "from __future__ import annotations\n\n\ndef f():\n    import workers.tasks\n"
    problems = forbidden(imports_in(source, "service.store.fake", "service/store/fake.py"), RULES["store"][1])
    assert problems == ["service/store/fake.py:5: `import workers.tasks` imports workers (forbidden here)"]

    # a relative import inside a method, and `from package import submodule`
    source = "class A:\n    def f(self):\n        from ..api import app\n        from service import portal\n"
    problems = forbidden(imports_in(source, "service.evaluation.fake", "service/evaluation/fake.py"),
                         RULES["evaluation"][1])
    assert [p.split(":")[1] for p in problems] == ["3", "4"]
    assert "service.api" in problems[0] and "service.portal" in problems[1]

    # importlib with a literal name
    source = "import importlib\nimportlib.import_module('litestar')\n"
    assert len(forbidden(imports_in(source, "workers.fake", "workers/fake.py"), RULES["workers"][1])) == 1

    # the core's allow-list: a third-party module is reported, the standard library is not
    source = "import os\nimport numpy as np\nfrom service import errors\nimport sqlalchemy\n"
    problems = outside(imports_in(source, "service.metrics.fake", "service/metrics/fake.py"),
                       (*CORE, "service.errors", "numpy", "scipy"))
    assert len(problems) == 1 and problems[0].startswith("service/metrics/fake.py:4: `import sqlalchemy`")

    # names and modules the deferred-import check looks up
    assert defined_names("service.no_such_module") is None
    assert {"main", "build_parser"} <= (defined_names("service.cli") or set())
    assert "send" in (defined_names("workers.tasks") or set())


# ------------------------------------------------------------------ no circles
def import_graph(modules: dict[str, list[Import]], top_only: bool) -> dict[str, set[str]]:
    """{module: the project modules it imports}: the module named, and each name of a ``from``
    import that is a module (``from service.portal import charts`` takes the face ``service.portal``
    and ``service.portal.charts``)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, imports in modules.items():
        for imp in imports:
            if not top_only or imp.top:
                graph[module] |= {t for t in imp.targets() if t in graph and t != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return sorted(found)


#: Circles closed only by imports inside functions: none since issue 26 (evaluator/measures and
#: judging/labels/judgment_sets were the last); a new one fails the test below.
DEFERRED_CIRCLES: list[list[str]] = []


def test_no_module_imports_itself_in_a_circle_when_it_is_loaded() -> None:
    """At module level no circle at all: the order in which modules are first imported never
    matters (the portal's package face imported its router, whose controllers imported the face)."""
    assert circles(import_graph(project(), top_only=True)) == []


def test_no_circle_through_imports_inside_functions_either() -> None:
    assert circles(import_graph(project(), top_only=False)) == DEFERRED_CIRCLES


def test_the_circle_finder_finds_a_planted_circle_through_a_package_face() -> None:
    modules = {
        "p": imports_in("from p.a import x\n", "p", "p/__init__.py", is_package=True),
        "p.a": imports_in("from p import b\n", "p.a", "p/a.py"),  # the face, and p.b
        "p.b": imports_in("def f():\n    import p.a\n", "p.b", "p/b.py"),
        "q": imports_in("import p.b\n", "q", "q.py"),
    }
    assert circles(import_graph(modules, top_only=True)) == [["p", "p.a"]]
    assert circles(import_graph(modules, top_only=False)) == [["p", "p.a", "p.b"]]


def test_the_api_starts_without_scipy_stats_and_the_workers_fork_with_it() -> None:
    """A server process (`cranfield serve`, service.asgi) never runs a test or an analysis, so
    scipy.stats (most of a second of import) is imported only inside the functions that call
    it; a worker imports it once, before the prefork pool forks its children (workers/tasks.py)."""
    import subprocess

    probe = ("import sys, importlib; importlib.import_module({!r}); "
             "print('scipy.stats' in sys.modules)")
    said = {module: subprocess.run([sys.executable, "-c", probe.format(module)], cwd=REPO, check=True,
                                   capture_output=True, text=True).stdout.strip()
            for module in ("service.api.app", "service.asgi", "workers.tasks")}
    assert said == {"service.api.app": "False", "service.asgi": "False", "workers.tasks": "True"}


# ------------------------------------------------------------- the rooms of the use cases
#: service/evaluation/'s folders, lowest first: a room imports only rooms listed before it
#: (service/evaluation/__init__.py says what each holds).
ROOMS = ("common", "permissions", "organising", "publishing", "runs", "analysing", "judging", "reproducing",
         "computing")


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["service", "evaluation"] else None


def upward(modules: dict[str, list[Import]]) -> list[str]:
    """A message for each import of a use-case room from a room below it (or from a folder
    ``ROOMS`` does not place)."""
    rank = {room: i for i, room in enumerate(ROOMS)}
    problems = []
    for module, imports in modules.items():
        here = room_of(module)
        if here is None:
            continue
        for imp in imports:
            for there in {room_of(t) for t in imp.targets()} - {None, here}:
                if here not in rank or there not in rank or rank[there] > rank[here]:
                    problems.append(f"{imp.path}:{imp.line}: `{imp.shown()}`: room {here} imports {there}, "
                                    f"which is not below it ({' < '.join(ROOMS)})")
    return problems


def test_every_room_is_placed_and_imports_only_the_rooms_below_it() -> None:
    folders = {p.name for p in (REPO / "service" / "evaluation").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(ROOMS)
    assert upward(project()) == []


def test_the_room_check_reports_an_upward_import_with_file_and_line() -> None:
    source = "from service.evaluation.computing.planning import plan_job\n"
    modules = {"service.evaluation.organising.fake": imports_in(source, "service.evaluation.organising.fake",
                                                                "service/evaluation/organising/fake.py")}
    assert upward(modules) == ["service/evaluation/organising/fake.py:1: `from service.evaluation.computing.planning "
                               "import plan_job`: room organising imports computing, which is not below it "
                               f"({' < '.join(ROOMS)})"]
