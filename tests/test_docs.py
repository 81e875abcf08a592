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

from rmm_core import MemoryConfig
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
CONFIG_GROUPS: dict[str, list[str]] = {
    "Retrieval": ["embedding_model", "candidates", "max_query_chars", "lexical_weight",
                  "dense_weight", "turn_weight", "neighbour_smoothing", "turn_vectors",
                  "memory_vector", "context_dates", "assistant_weight", "assistant_speakers",
                  "immediate_recall", "supersession"],
    "LLM-free memories": ["max_hit_words", "segment_window", "segment_cutoff",
                          "segment_min_turns", "segment_max_turns", "merge_threshold"],
    "Stages and the LLM": ["segmentation", "extraction", "compression", "reconciliation",
                           "llmlingua_model_path", "llm_timeout", "llm_workers"],
    "Sessions and reflection": ["session_idle_timeout", "session_max_turns",
                                "reflection_max_attempts", "reflection_retry_delay",
                                "background_reflection", "reflection_interval", "progress"],
    "Storage": ["synchronous", "search_backend", "cache_bytes"],
    "Learned reranker": ["reranker", "reranker_weights", "reranker_scope",
                         "reranker_learning_rate", "reranker_baseline",
                         "reranker_temperature", "reranker_combine", "reranker_mix",
                         "reranker_batch", "reranker_cache_bytes", "reranker_seed"],
    "A-MEM notes": ["notes", "notes_in_key", "note_links", "note_link_threshold",
                    "note_follow"],
}
"""Every MemoryConfig field, once, in the group the configuration page shows it under."""
BOUNDS = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}


def _allowed(field) -> str:
    choices = [a for a in typing.get_args(field.annotation) if isinstance(a, str)]
    if typing.get_origin(field.annotation) is typing.Literal:
        return " / ".join(f"`{c}`" for c in choices)
    limits = [f"{BOUNDS[k]} {getattr(m, k)}" for m in field.metadata for k in BOUNDS
              if getattr(m, k, None) is not None]
    return ", ".join(limits)


def config_table() -> str:
    """The configuration page's tables, generated from `MemoryConfig`'s fields."""
    fields = MemoryConfig.model_fields
    out = []
    for group, names in CONFIG_GROUPS.items():
        out += [f"### {group}", "", "| option | default | allowed | what it does |",
                "|---|---|---|---|"]
        for name in names:
            field = fields[name]
            text = (field.description or "").replace("|", "\\|")
            out.append(f"| `{name}` | `{field.default!r}` | {_allowed(field)} | {text} |")
        out.append("")
    return "\n".join(out)


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
    assert "add_session" in core and "MemoryConfig" in core
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
    grouped = [name for names in CONFIG_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(MemoryConfig.model_fields), \
        "put each MemoryConfig field in exactly one CONFIG_GROUPS group"
    page = CONFIG_PAGE.read_text()
    shown = page[page.index(BEGIN) + len(BEGIN):page.index(END)].strip()
    assert shown == config_table().strip(), "run `python tests/test_docs.py` to regenerate"


def test_every_config_option_is_documented():
    page = CONFIG_PAGE.read_text()
    missing = [name for name in MemoryConfig.model_fields if f"`{name}`" not in page]
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
