"""The docs site: it builds `--strict`, every Python block of its pages runs, and the facts a
page states from the code (settings, schema version, commands) match the code.

Run `python tests/test_docs.py` to rewrite the configuration table after changing
`MemoryConfig`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from rmm_core import MemoryConfig
from rmm_core.config import FLAT_NAMES
from rmm_core.storage.base import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# each package's reference page, and the page that must show every name of its __all__
PAGES = {"rmm_core": "core", "langchain_rmm": "langchain", "llamaindex_rmm": "llamaindex"}
GUIDES = sorted(p.name for p in DOCS.glob("*.md"))
NEEDS = {"langchain.md": "langchain", "getting-started.md": "langchain",
         "llamaindex.md": "llama_index.core",
         "cli.md": None, "postgres.md": "pgserver"}
"""Module a page's code needs (skipped without it); postgres.md also needs a server."""
CONFIG_PAGE = DOCS / "configuration.md"
BEGIN, END = "<!-- config-table:begin -->", "<!-- config-table:end -->"
BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}


def _allowed(field) -> str:
    args = typing.get_args(field.annotation)
    literal = next((a for a in (field.annotation, *args)
                    if typing.get_origin(a) is typing.Literal), None)
    if literal is not None:
        none = " / `None`" if type(None) in args else ""
        return " / ".join(f"`{c}`" for c in typing.get_args(literal)) + none
    limits = [f"{BOUNDS[k]} {getattr(m, k)}" for m in field.metadata for k in BOUNDS
              if getattr(m, k, None) is not None]
    return ", ".join(limits)


def config_table() -> str:
    """The configuration page's tables, generated from `MemoryConfig`: one per group, the
    top-level switches, and the flat names of earlier releases with their new names."""
    out = []
    top = {n: f for n, f in MemoryConfig.model_fields.items() if not _is_group(f)}
    for group, gfield in MemoryConfig.model_fields.items():
        if _is_group(gfield):
            model = gfield.annotation
            out += [f"### `{group}`", "", (model.__doc__ or "").strip(), ""]
            out += _rows({f"{group}.{n}": f for n, f in model.model_fields.items()})
    out += ["### Top level", ""] + _rows(top)
    out += ["### Renamed settings", "",
            "The flat names of earlier releases still work for one release, each with a "
            "`DeprecationWarning` naming its new place.", "", "| old name | new name |",
            "|---|---|"]
    out += [f"| `{old}` | `{new}` |" for old, new in FLAT_NAMES.items()] + [""]
    return "\n".join(out)


def _is_group(field) -> bool:
    return isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)


def _rows(fields: dict) -> list[str]:
    out = ["| option | default | allowed | what it does |", "|---|---|---|---|"]
    for name, field in fields.items():
        text = (field.description or "").replace("|", "\\|")
        out.append(f"| `{name}` | `{field.default!r}` | {_allowed(field)} | {text} |")
    return out + [""]


def dotted_names() -> list[str]:
    """Every setting by its dotted name (top-level switches by their own)."""
    return [f"{group}.{name}" if _is_group(gfield) else group
            for group, gfield in MemoryConfig.model_fields.items()
            for name in (gfield.annotation.model_fields if _is_group(gfield) else [group])]


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


@pytest.mark.skipif(importlib.util.find_spec("mkdocstrings") is None,
                    reason="the docs extra is not installed (pip install -e '.[docs]')")
def test_docs_build_without_warnings(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "WARNING" not in output, output[-3000:]
    for package, page in PAGES.items():
        html = (tmp_path / "site" / "reference" / page / "index.html").read_text()
        missing = [name for name in importlib.import_module(package).__all__
                   if f'id="{package}.{name}"' not in html and f'.{name}"' not in html]
        assert not missing, f"{package} names missing from reference/{page}.md: {missing}"
    core = (tmp_path / "site" / "reference" / "core" / "index.html").read_text()
    assert "add_session" in core
    assert "MemoryConfig" in core
    for guide in GUIDES:
        assert (tmp_path / "site" / (guide[:-3] if guide != "index.md" else "") /
                "index.html").is_file(), f"{guide} was not built (add it to mkdocs.yml's nav)"


def test_every_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert not [g for g in GUIDES if f" {g}" not in nav]


@pytest.mark.parametrize("page", [g for g in GUIDES if python_blocks(DOCS / g)])
def test_python_blocks_run(page, tmp_path, monkeypatch, capsys):
    """A page's Python blocks run in order in one namespace, in an empty folder."""
    if NEEDS.get(page):
        pytest.importorskip(NEEDS[page])
    if page == "postgres.md":
        from backends import drop_schema, postgres_url, with_schema

        base = postgres_url()
        monkeypatch.setenv("RMM_DB", with_schema(base, "docs_page"))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    try:
        for number, block in enumerate(python_blocks(DOCS / page), start=1):
            exec(compile(block, f"{page} block {number}", "exec"), namespace)  # noqa: S102
    finally:
        if page == "postgres.md":
            drop_schema(base, "docs_page")
    assert capsys.readouterr().out, f"{page}: its examples print nothing to show"


def test_configuration_page_lists_every_option_with_its_default():
    page = CONFIG_PAGE.read_text()
    shown = page[page.index(BEGIN) + len(BEGIN):page.index(END)].strip()
    assert shown == config_table().strip(), "run `python tests/test_docs.py` to regenerate"


def test_every_config_option_is_documented():
    page = CONFIG_PAGE.read_text()
    missing = [name for name in [*dotted_names(), *FLAT_NAMES] if f"`{name}`" not in page]
    assert not missing, f"add these options to docs/configuration.md: {missing}"


def test_postgres_page_names_the_current_schema_version():
    page = (DOCS / "postgres.md").read_text()
    assert f"schema version is **{SCHEMA_VERSION}**" in page


def test_cli_page_covers_every_command():
    from rmm_core.cli import BENCHES
    from rmm_core.ops.commands import COMMANDS

    page = (DOCS / "cli.md").read_text()
    missing = [c for c in [*COMMANDS, *(f"bench {b}" for b in BENCHES)] if f"rmm {c}" not in page]
    assert not missing, f"docs/cli.md does not show: {missing}"


if __name__ == "__main__":  # rewrite the configuration table from MemoryConfig
    text = CONFIG_PAGE.read_text()
    head, rest = text.split(BEGIN)
    CONFIG_PAGE.write_text(f"{head}{BEGIN}\n{config_table()}\n{END}{rest.split(END)[1]}")
    print(f"wrote {CONFIG_PAGE}")
