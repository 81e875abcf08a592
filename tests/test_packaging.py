"""The distribution ships every package and data file of the source tree: `pyproject.toml`
lists packages by hand (the `core` folder installs as `rmm_core`), so a folder left off the
list would install a wheel that fails on import (as `rmm_core.storage.sql` once did)."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def source_packages() -> dict[str, Path]:
    """Every package folder of the tree (one holding `__init__.py`) by its installed name."""
    found = {}
    for name, folder in SETUPTOOLS["package-dir"].items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            if "__pycache__" in init.parts:
                continue
            sub = init.parent.relative_to(ROOT / folder).parts
            found[".".join((name, *sub))] = init.parent
    return found


def test_every_package_folder_is_listed_for_the_wheel():
    listed = set(SETUPTOOLS["packages"])
    tree = set(source_packages())
    assert not tree - listed, f"add to [tool.setuptools] packages: {sorted(tree - listed)}"
    assert not listed - tree, f"listed but not in the tree: {sorted(listed - tree)}"


def test_every_data_file_is_declared_as_package_data():
    patterns = SETUPTOOLS.get("package-data", {})
    missing = []
    for name, folder in source_packages().items():
        for path in folder.iterdir():
            if path.is_dir() or path.suffix in {".py", ".pyc"}:
                continue
            relative = path.relative_to(folder).as_posix()
            if not any(fnmatch.fnmatch(relative, p) for p in patterns.get(name, [])):
                missing.append(f"{name}: {relative}")
        # data folders without __init__.py ship through their parent package's patterns
        for data in (d for d in folder.iterdir() if d.is_dir() and d.name != "__pycache__"
                     and not (d / "__init__.py").exists()):
            for path in data.rglob("*"):
                relative = path.relative_to(folder).as_posix()
                if path.is_file() and "__pycache__" not in path.parts and not any(
                        fnmatch.fnmatch(relative, p) for p in patterns.get(name, [])):
                    missing.append(f"{name}: {relative}")
    assert not missing, f"add to [tool.setuptools] package-data: {missing}"
