"""The inspector in a real browser: `rmm ui --write` in a subprocess over a store built from
a LoCoMo dev conversation, driven by Selenium through Debian's headless chromium. It
searches, opens a hit's provenance and versions, marks the hits an answer used and sees the
reranker's weights change. Screenshots land in the test's tmp dir (and in $RMM_UI_SHOTS
when set, which is how docs/img/inspector.png is made)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the ui extra is not installed (pip install -e '.[ui]')")
pytest.importorskip("selenium", reason="selenium is not installed (the test extra)")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as shown  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from rmm_core import ReflectiveMemory  # noqa: E402
from rmm_core.bench.datasets import load  # noqa: E402
from rmm_core.bench.records import ingest  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / \
    "locomo10_dev.json"
"""The LoCoMo dev file beside the clone (as tests/conftest.py finds it; importing conftest
by name would find another test folder's)."""

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no chromium and chromedriver on PATH (apt-get install chromium chromium-driver)")

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--window-size=1280,1000")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def locomo_store(tmp_path_factory, embedder):
    if not LOCOMO.exists():
        pytest.skip("../shared/data/locomo/locomo10_dev.json is absent (it ships beside CI's "
                    "clone, not with the package)")
    conv = load("locomo", LOCOMO, select=[0])[0]
    path = tmp_path_factory.mktemp("browser") / "locomo.sqlite"
    with ReflectiveMemory.open(str(path), embedder=embedder) as mem:
        ingest(mem, conv)
    return path, conv


@pytest.fixture(scope="module")
def server(locomo_store):
    path, conv = locomo_store
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RMM_PROGRESS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "rmm_core.cli", "ui", str(path), "--write",
                             "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"rmm ui did not start: {proc.stderr.read()}") from None
                time.sleep(0.3)
        yield url, conv
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def browser(tmp_path):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def shot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 5_000
    if os.environ.get("RMM_UI_SHOTS"):
        folder = Path(os.environ["RMM_UI_SHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / path.name)
    return path


def arrive(driver, heading: str) -> None:
    """Wait until the page whose heading holds `heading` has loaded (a click returns
    before the next page does). A heading read while the old page is being replaced is
    gone before its text is ("Node with given id does not belong to the document"): the
    wait reads it again, and still fails if the heading never shows."""
    WebDriverWait(driver, 20, ignored_exceptions=(WebDriverException,)).until(
        shown.text_to_be_present_in_element((By.TAG_NAME, "h1"), heading))


def weights(driver) -> dict[str, float]:
    return {cell.get_attribute("data-feature"): float(cell.text)
            for cell in driver.find_elements(By.CSS_SELECTOR, "td.weight")}


def test_search_provenance_feedback_in_a_browser(server, browser, tmp_path):
    url, conv = server
    question = conv.questions[0].question  # when Caroline went to the support group
    browser.get(url + "/")
    browser.find_element(By.LINK_TEXT, conv.sample_id).click()
    arrive(browser, "Memories of")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.memory")) == 50
    assert browser.find_element(By.CSS_SELECTOR, ".chart svg")
    shot(browser, tmp_path, "inspector-memories")

    browser.find_element(By.LINK_TEXT, "learning").click()
    arrive(browser, "What the reranker learned")
    before = weights(browser)
    examples = int(browser.find_element(By.ID, "examples").text)

    browser.find_element(By.LINK_TEXT, "search").click()
    arrive(browser, "Search")
    budget = browser.find_element(By.NAME, "budget")
    budget.clear()
    budget.send_keys("300")  # a budget that cuts the five hits, so the page shows where
    box = browser.find_element(By.NAME, "q")
    box.send_keys(question)
    box.submit()
    WebDriverWait(browser, 20).until(shown.presence_of_element_located((By.ID, "cut-summary")))
    hits = browser.find_elements(By.CSS_SELECTOR, "tr.hit.returned")
    assert len(hits) == 5
    summary = browser.find_element(By.ID, "cut-summary").text
    held = int(re.search(r"300 words of context hold the first (\d) of 5", summary).group(1))
    assert held < 5
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.hit.cut")) == 1
    places = [int(h.find_element(By.TAG_NAME, "td").text) for h in hits]
    assert places == [1, 2, 3, 4, 5]  # as `--explain` and the chart's #1-#5 number them
    cut = browser.find_element(By.CSS_SELECTOR, "tr.hit.cut td").text
    assert int(cut) == held + 1  # the line falls above the first hit that does not fit
    scores = [float(h.find_element(By.CSS_SELECTOR, "td.score").text) for h in hits]
    assert scores == sorted(scores, reverse=True)  # the API's, never rising
    assert browser.find_element(By.CSS_SELECTOR, "#breakdown svg rect")
    shot(browser, tmp_path, "inspector")

    link = hits[0].find_element(By.CSS_SELECTOR, "td a")
    link.click()
    arrive(browser, "Memory")
    assert browser.find_element(By.ID, "provenance")
    sources = browser.find_elements(By.CSS_SELECTOR, "tr.turn.ref")
    assert sources, "the memory's source turns are marked in their session"
    assert browser.find_elements(By.CSS_SELECTOR, "#version-table tr.version")
    source_ids = {row.find_element(By.TAG_NAME, "td").text for row in sources}
    assert all(re.fullmatch(r"D\d+:\d+", i) for i in source_ids)
    shot(browser, tmp_path, "inspector-provenance")
    browser.back()
    WebDriverWait(browser, 20).until(shown.presence_of_element_located((By.ID, "feedback")))

    boxes = browser.find_elements(By.NAME, "cited")
    assert len(boxes) == 5
    boxes[0].click()
    browser.find_element(By.CSS_SELECTOR, "#feedback button[type=submit]").click()
    arrive(browser, "What the reranker learned")
    assert int(browser.find_element(By.ID, "examples").text) == examples + 1
    after = weights(browser)
    assert after.keys() == before.keys()
    assert any(abs(after[k] - before[k]) > 1e-6 for k in after), "a step moved the weights"
    shot(browser, tmp_path, "inspector-learning")
