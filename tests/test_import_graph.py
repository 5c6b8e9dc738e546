"""Which package may import which (docs/architecture.md, "Dependency direction"), enforced.

    profilerhub (SDK)      imports no other package of ours; its CLI's ``analyze`` imports
                           profilerhub_analysis inside the command (a library, not the server)
    profilerhub_analysis   imports no other package of ours
    profilerhub_core       imports no other package of ours but the command toolkit
    profilerhub_hub        core, analysis                  never worker, app
    profilerhub_worker     core, analysis                  never hub, app
    profilerhub_app        core, analysis                  never hub, worker
    profilerhub_stack      core, worker                    never hub, app (it runs them as processes)

Inside the hub and the app the same one-way rule holds between layers (STYLE.md, 11): a route
module never imports another route module (the hub's ``routes/paths.py``, shared paths and no
routes, excepted) nor the factory above it (``main``), and nothing of the app below its routes
(``owned``, ``jobdata``, ``live``, ``services``, ``http``, …) imports a route or ``main``.

No two modules of a server package import each other, directly or round a longer circle, counting
imports under TYPE_CHECKING (a type needed one module too high is defined one module too low).

Server packages may import exactly two SDK modules, both standard library only at import:
``profilerhub.cli.toolkit`` (what every sub-command uses) and ``profilerhub.hubhttp`` (the one HTTP
client of the hub's API, the profiler app's too). Every ``import`` counts, inside functions and
under TYPE_CHECKING too: a lazy import is still a dependency. ``python tests/test_import_graph.py``
prints the graph.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "profilerhub": ROOT / "services" / "profilerhub",
    "profilerhub_analysis": ROOT / "services" / "profilerhub_analysis",
    "profilerhub_core": ROOT / "services" / "profilerhub_core",
    "profilerhub_hub": ROOT / "services" / "profilerhub_hub",
    "profilerhub_app": ROOT / "services" / "profilerhub_app",
    "profilerhub_worker": ROOT / "workers" / "profilerhub_worker",
    "profilerhub_stack": ROOT / "services" / "profilerhub_stack",
}
TOOLKIT = "profilerhub.cli.toolkit"
HUBHTTP = "profilerhub.hubhttp"
SHARED_SDK = (TOOLKIT, HUBHTTP)
ALLOWED: dict[str, set[str]] = {
    "profilerhub": {"profilerhub_analysis"},
    "profilerhub_analysis": set(),
    "profilerhub_core": {TOOLKIT},
    "profilerhub_hub": {"profilerhub_core", "profilerhub_analysis", *SHARED_SDK},
    "profilerhub_worker": {"profilerhub_core", "profilerhub_analysis", *SHARED_SDK},
    "profilerhub_app": {"profilerhub_core", "profilerhub_analysis", *SHARED_SDK},
    # The whole stack runs hub, worker and app as processes; of their code it needs the worker's exit step.
    "profilerhub_stack": {"profilerhub_core", "profilerhub_worker", *SHARED_SDK},
}
# The SDK reaches the analysis engine only from its command line and the trial API
# (`profilerhub.debug`, which needs the `analysis` extra like `analyze`), never from `import profilerhub`.
SDK_MAY_IMPORT_ANALYSIS_FROM = (PACKAGES["profilerhub"] / "cli", PACKAGES["profilerhub"] / "debug")


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, dotted module) of every absolute import in one file."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, node.module)]
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def dependencies() -> dict[str, dict[str, list[str]]]:
    """package -> imported package (or the toolkit) -> ['file:line', ...]."""
    graph: dict[str, dict[str, list[str]]] = {name: defaultdict(list) for name in PACKAGES}
    for name, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            for line, module in imports(path):
                top = module.split(".")[0]
                if top == name or top not in PACKAGES:
                    continue
                shared = [m for m in SHARED_SDK if module == m or module.startswith(m + ".")]
                if top == "profilerhub" and shared:
                    target = shared[0]
                elif top == "profilerhub" and module == "profilerhub.cli":
                    continue  # the `from profilerhub.cli import toolkit` form names its module next
                else:
                    target = top
                where = f"{path.relative_to(ROOT)}:{line}"
                if where not in graph[name][target]:
                    graph[name][target].append(where)
    return graph


def test_each_package_imports_only_what_the_architecture_allows() -> None:
    wrong = [
        f"{name} -> {target}: {', '.join(places)}"
        for name, targets in dependencies().items()
        for target, places in targets.items()
        if target not in ALLOWED[name]
    ]
    assert wrong == [], "imports against docs/architecture.md:\n" + "\n".join(wrong)


def test_the_hub_client_the_server_packages_share_imports_nothing_of_the_sdk_but_its_version() -> None:
    """``profilerhub.hubhttp`` stays a leaf: the profiler app importing it pulls in no SDK run code."""
    path = PACKAGES["profilerhub"] / "hubhttp.py"
    ours = sorted({m for _, m in imports(path) if m.split(".")[0] in PACKAGES})
    assert ours == ["profilerhub", "profilerhub.__version__"], ours


def test_the_sdk_reaches_analysis_only_from_its_command_line_and_the_trial() -> None:
    places = dependencies()["profilerhub"].get("profilerhub_analysis", [])
    outside = [
        p
        for p in places
        if not any((ROOT / p.split(":")[0]).is_relative_to(f) for f in SDK_MAY_IMPORT_ANALYSIS_FROM)
    ]
    assert outside == []


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from profilerhub_worker.tasks import apps\n")
    assert (2, "profilerhub_worker.tasks.apps") in imports(module)


def module_name(path: Path) -> str:
    """The dotted name of one of our files (``profilerhub_app/routes/jobs.py``: ``…routes.jobs``)."""
    for name, folder in PACKAGES.items():
        if path.is_relative_to(folder):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise ValueError(f"{path} is in none of our packages")


def own_imports(path: Path, me: str) -> list[tuple[int, str]]:
    """Like :func:`imports`, with relative imports resolved against module ``me`` (``path``'s name)."""
    found = imports(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            module = ".".join([*package, *([node.module] if node.module else [])])
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return found


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


LAYERED = ("profilerhub_hub", "profilerhub_app")
#: Modules under ``routes/`` that hold no route (shared paths): any route may import them.
NOT_ROUTES = ("profilerhub_hub.routes.paths",)


def layer_violations(package: str, files: list[tuple[Path, str]]) -> list[str]:
    """Imports against the layers inside ``package`` (the module docstring); ``files``: (path, name)."""
    routes, main = f"{package}.routes", f"{package}.main"
    wrong = []
    for path, me in files:
        if me == routes or any(_under(me, m) for m in NOT_ROUTES):
            continue  # routes/__init__ gathers the routers; paths.py holds no route
        is_route = _under(me, routes)
        may_import_routes = me in (main, f"{package}.__main__")
        seen: set[int] = set()
        for line, module in own_imports(path, me):
            up = _under(module, main) or (
                _under(module, routes) and module != routes and not any(_under(module, m) for m in NOT_ROUTES)
            )
            if not up or line in seen:
                continue
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line} imports {module}"
            if is_route:
                wrong.append(f"a route imports another route or main: {where}")
            elif package == "profilerhub_app" and not may_import_routes:
                wrong.append(f"the app below its routes imports a route or main: {where}")
            seen.add(line)
    return wrong


def _files(package: str) -> list[tuple[Path, str]]:
    return [(path, module_name(path)) for path in sorted(PACKAGES[package].rglob("*.py"))]


def test_routes_never_import_routes_and_the_apps_data_layer_never_imports_routes() -> None:
    wrong = [w for package in LAYERED for w in layer_violations(package, _files(package))]
    assert wrong == [], "imports against the layers (this file's docstring):\n" + "\n".join(wrong)


def test_the_layer_checker_sees_a_route_importing_a_route_and_the_data_layer_importing_one(
    tmp_path: Path,
) -> None:
    route, data = tmp_path / "route.py", tmp_path / "data.py"
    route.write_text("from .analysis import answer\n")
    data.write_text("def f():\n    from profilerhub_app.routes.jobs import routes\n")
    files = [(route, "profilerhub_app.routes.model"), (data, "profilerhub_app.model")]
    wrong = layer_violations("profilerhub_app", files)
    assert len(wrong) == 2 and "a route imports" in wrong[0] and "below its routes" in wrong[1], wrong
    assert layer_violations("profilerhub_app", [(route, "profilerhub_app.main")]) == []


SERVER_PACKAGES = (
    "profilerhub_core",
    "profilerhub_analysis",
    "profilerhub_hub",
    "profilerhub_app",
    "profilerhub_worker",
    "profilerhub_stack",
)


def import_circles(packages: tuple[str, ...] = SERVER_PACKAGES) -> list[list[str]]:
    """Circles of imports between modules of ``packages`` (each sorted; TYPE_CHECKING counts). A
    module importing its own package (the ``__init__`` it runs under) is not a circle."""
    files = {module_name(p): p for name in packages for p in sorted(PACKAGES[name].rglob("*.py"))}
    edges: dict[str, set[str]] = {me: set() for me in files}
    for me, path in files.items():
        for _, module in own_imports(path, me):
            while module and module not in files:
                module = module.rpartition(".")[0]
            if module and module != me and not me.startswith(module + "."):
                edges[me].add(module)
    # Tarjan's strongly connected components, iteratively: every component of two or more is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []
    for root in files:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, todo = work[-1]
            step = next(todo, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(edges[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circles_inside_the_server_packages() -> None:
    assert import_circles() == [], "modules that import each other (move the shared part one module down)"


if __name__ == "__main__":
    for name, targets in dependencies().items():
        print(f"{name} -> {', '.join(sorted(targets)) or '(nothing of ours)'}")
        if "-v" in sys.argv:
            for target, places in sorted(targets.items()):
                print(f"    {target}: {len(places)} imports, first {places[0]}")
