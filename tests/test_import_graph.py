"""Which package may import which (docs/architecture.md, "Dependency direction"), enforced.

    profilerhub (SDK)      imports no other package of ours; its CLI's ``analyze`` imports
                           profilerhub_analysis inside the command (a library, not the server)
    profilerhub_analysis   imports no other package of ours
    profilerhub_core       imports no other package of ours but the command toolkit
    profilerhub_hub        core, analysis                  never worker, app
    profilerhub_worker     core, analysis                  never hub, app
    profilerhub_app        core, analysis                  never hub, worker

Server packages may import exactly one SDK module, ``profilerhub.cli.toolkit`` (what every
sub-command uses). Every ``import`` counts, inside functions and under TYPE_CHECKING too: a lazy
import is still a dependency. ``python tests/test_import_graph.py`` prints the graph.
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
}
TOOLKIT = "profilerhub.cli.toolkit"
ALLOWED: dict[str, set[str]] = {
    "profilerhub": {"profilerhub_analysis"},
    "profilerhub_analysis": set(),
    "profilerhub_core": {TOOLKIT},
    "profilerhub_hub": {"profilerhub_core", "profilerhub_analysis", TOOLKIT},
    "profilerhub_worker": {"profilerhub_core", "profilerhub_analysis", TOOLKIT},
    "profilerhub_app": {"profilerhub_core", "profilerhub_analysis", TOOLKIT},
}
# The SDK reaches the analysis engine only from its command line, never from `import profilerhub`.
SDK_MAY_IMPORT_ANALYSIS_FROM = PACKAGES["profilerhub"] / "cli"


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
                if top == "profilerhub" and (module == TOOLKIT or module.startswith(TOOLKIT + ".")):
                    target = TOOLKIT
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


def test_the_sdk_reaches_analysis_only_from_its_command_line() -> None:
    places = dependencies()["profilerhub"].get("profilerhub_analysis", [])
    outside = [p for p in places if not (ROOT / p.split(":")[0]).is_relative_to(SDK_MAY_IMPORT_ANALYSIS_FROM)]
    assert outside == []


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from profilerhub_worker.tasks import apps\n")
    assert (2, "profilerhub_worker.tasks.apps") in imports(module)


if __name__ == "__main__":
    for name, targets in dependencies().items():
        print(f"{name} -> {', '.join(sorted(targets)) or '(nothing of ours)'}")
        if "-v" in sys.argv:
            for target, places in sorted(targets.items()):
                print(f"    {target}: {len(places)} imports, first {places[0]}")
