"""Each folder of pipelines/ imports only the folders docs/ARCHITECTURE.md allows it (the table "Folders and what they
may import"): the layering is checked, not only drawn."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ROOT / "pipelines"
MAP = ROOT / "docs" / "ARCHITECTURE.md"


def allowed() -> dict[str, set[str]]:
    """Folder -> the project folders (of pipelines/, and `schemas`) its row of the table names as imports."""
    rows = re.findall(r"^\| `pipelines/(\w+)/` \|[^|]*\| ([^|]*) \|$", MAP.read_text(), re.M)
    folders = {p.name for p in PIPELINES.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    table = {}
    for folder, imports in rows:
        if imports.startswith("every folder above"):
            table[folder] = folders | {"schemas"}
        elif imports.strip() == "nothing":
            table[folder] = set()
        else:
            table[folder] = set(re.findall(r"`(\w+)`", imports.split("(")[0])) & (folders | {"schemas"})
    return table


def imported(folder: Path) -> dict[str, set[str]]:
    """Project folder -> the files of `folder` that import from it (its own folder left out)."""
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [f"{node.module}.{a.name}" for a in node.names] if node.module == "pipelines" \
                    else [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            for module in modules:
                parts = module.split(".")
                target = parts[1] if parts[0] == "pipelines" and len(parts) > 1 else parts[0]
                if parts[0] in ("pipelines", "schemas") and target != folder.name:
                    found.setdefault(target, set()).add(path.name)
    return found


def test_every_folder_has_a_row_and_keeps_to_it():
    table = allowed()
    folders = sorted(p for p in PIPELINES.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert {p.name for p in folders} == set(table), "a pipelines/ folder without a row in docs/ARCHITECTURE.md"
    breaches = {f"{folder.name} -> {target}": sorted(files) for folder in folders
                for target, files in imported(folder).items() if target not in table[folder.name]}
    assert not breaches, f"imports docs/ARCHITECTURE.md does not allow: {breaches}"


def test_no_module_sits_at_the_root_of_pipelines():
    assert sorted(p.name for p in PIPELINES.glob("*.py")) == ["__init__.py"]


def test_the_check_sees_a_forbidden_import(tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "replay.py").write_text("from pipelines.storage import lake\nfrom pipelines.settings.config import C\n")
    assert imported(gold) == {"storage": {"replay.py"}, "settings": {"replay.py"}}
    assert "storage" not in allowed()["gold"]
