"""Relative times in the languages dateparser reads beyond the six `timeref` reads itself are
grounded from dateparser's tables (`rmm_core.language.timephrases`): "вчера" said on 8 May
2024 reads "вчера (7 May 2024)"."""

from __future__ import annotations

import json
import sys
from datetime import datetime

import pytest

from rmm_core.language import timephrases
from rmm_core.language.timeref import ahead, find_relative, ground, resolve
from rmm_core.read.when import Period, named_period

SAID = datetime(2024, 5, 8, 19, 30)  # a Wednesday


@pytest.mark.parametrize(("text", "grounded"), [
    ("Я вчера купил собаку, а 3 дня назад кошку",
     "Я вчера (7 May 2024) купил собаку, а 3 дня назад (5 May 2024) кошку"),
    ("на прошлой неделе мы переехали",
     "на прошлой неделе (the week of 29 April 2024) мы переехали"),
    ("我昨天去了北京，下个月去上海", "我昨天 (7 May 2024)去了北京，下个月 (June 2024)去上海"),
    ("3天前我们见过面", "3天前 (5 May 2024)我们见过面"),
    ("先週、京都に行きました", "先週 (the week of 29 April 2024)、京都に行きました"),
    ("어제 비가 왔어요", "어제 (7 May 2024) 비가 왔어요"),
    ("ذهبت أمس إلى السوق", "ذهبت أمس (7 May 2024) إلى السوق"),
    ("मैं पिछले साल दिल्ली गया", "मैं पिछले साल (2023) दिल्ली गया"),
    ("ฉันไปเชียงใหม่เมื่อวาน", "ฉันไปเชียงใหม่เมื่อวาน (7 May 2024)"),
    ("geçen ay İzmir'e taşındım", "geçen ay (April 2024) İzmir'e taşındım"),
    ("wczoraj byłem w kinie", "wczoraj (7 May 2024) byłem w kinie"),
    ("vorige week was ik ziek", "vorige week (the week of 29 April 2024) was ik ziek"),
    ("i går åt jag fisk", "i går (7 May 2024) åt jag fisk"),
])
def test_relative_times_in_more_languages_are_grounded(text, grounded):
    assert ground(text, SAID) == grounded
    assert ground(grounded, SAID) == grounded  # twice changes nothing


@pytest.mark.parametrize("text", [
    "2019年前后我在东京",  # a year, not "19 years ago"
    "हम कल मिलेंगे या मिले थे",  # कल is yesterday and tomorrow: left as said
    "heute Morgen war ich joggen",  # German morning, not Dutch "morgen" (tomorrow)
    "the homme I saw over there",
    "I went home over 3 weeks later",
])
def test_what_is_not_a_relative_time_stays_as_said(text):
    assert ground(text, SAID) == text


def test_a_question_in_chinese_names_its_period():
    found = find_relative("我下周要做什么？")
    assert found[0] == "下周"
    assert ahead(found)
    assert resolve(found, SAID.date()) == "the week of 13 May 2024"
    assert named_period("我上周做了什么？", SAID) == \
        Period(datetime(2024, 4, 29).date(), datetime(2024, 5, 5).date())


def test_a_text_without_a_relative_time_never_reaches_dateparser(monkeypatch):
    monkeypatch.setitem(sys.modules, "dateparser", None)  # importing it now fails
    for text in ("Я купил собаку", "我去了北京", "ik was ziek", "вчера", "昨天"):
        ground(text, SAID)


def test_the_shipped_table_is_what_dateparser_reads():
    import dateparser

    shipped = json.loads(timephrases.TABLE.read_text(encoding="utf-8"))
    if shipped["dateparser"] != dateparser.__version__:
        pytest.skip(f"the table was read from dateparser {shipped['dateparser']}, this is "
                    f"{dateparser.__version__}: python -m rmm_core.language.timephrases")
    assert timephrases.dumps(timephrases.build()) == timephrases.TABLE.read_text("utf-8")
