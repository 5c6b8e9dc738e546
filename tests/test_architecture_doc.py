"""``docs/architecture.md`` lists every module of every package ("Every module"), and nothing else:
a module added without its row, or a row left after its module went, fails here with its name."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_import_graph import PACKAGES, ROOT  # every package of ours, and where it lives

DOC = ROOT / "docs" / "architecture.md"


def listed(text: str) -> dict[str, list[str]]:
    """package -> the module paths (or ``folder/*.py``) its table's rows name first."""
    section = text.split("\n## Every module\n", 1)[1]
    rows: dict[str, list[str]] = {}
    package = None
    for line in section.splitlines():
        if heading := re.fullmatch(r"### `(\w+)`", line.strip()):
            package = heading[1]
            rows[package] = []
        elif package and (row := re.match(r"\| `([^`]+\.py)` \|", line)):
            rows[package].append(row[1])
    return rows


def missing_and_stale(text: str) -> tuple[list[str], list[str]]:
    rows = listed(text)
    missing, stale = [], []
    for package, folder in PACKAGES.items():
        names = rows.get(package, [])
        covered: set[Path] = set()
        for name in names:
            found = {p for p in (folder.glob(name) if "*" in name else [folder / name]) if p.is_file()}
            if not found:
                stale.append(f"{package}: {name}")
            covered |= found
        for path in sorted(folder.rglob("*.py")):
            if path.name != "__init__.py" and path not in covered:
                missing.append(f"{package}: {path.relative_to(folder).as_posix()}")
    return missing, stale


def test_architecture_lists_every_module_and_no_module_that_is_gone() -> None:
    missing, stale = missing_and_stale(DOC.read_text())
    assert missing == [], "modules without a row in docs/architecture.md:\n" + "\n".join(missing)
    assert stale == [], "rows in docs/architecture.md naming no module:\n" + "\n".join(stale)


def test_the_check_sees_a_module_left_out() -> None:
    text = DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `owned.py` |"))
    missing, stale = missing_and_stale(text.replace(row + "\n", ""))
    assert missing == ["profilerhub_app: owned.py"] and stale == []
