"""The packaged embedders: both runtimes give the float model's vectors, batched or alone."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rmm_core.models.embed import (
    EMBEDDERS,
    SHORT_TOKENS,
    OnnxMiniLMEmbedder,
    OpenVinoMiniLMEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
)

TEXTS = ["I painted a sunrise over the lake last weekend.",
         "Caroline went to the LGBTQ support group on 7 May 2023.",
         "ok", "A much longer turn that talks about adoption agencies, interviews in June, "
         "the kids' school, and a camping trip to the mountains with the whole family."]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    pytest.importorskip("sentence_transformers")  # the float model: the `torch` extra
    return SentenceTransformerEmbedder().embed(TEXTS)


@pytest.mark.parametrize("runtime", [OpenVinoMiniLMEmbedder, OnnxMiniLMEmbedder])
def test_runtimes_match_the_float_model(runtime, reference):
    embedder = runtime()
    batch = embedder.embed(TEXTS)
    alone = np.stack([embedder.embed([t])[0] for t in TEXTS])
    assert batch.shape == (len(TEXTS), 384)
    assert batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert (batch * reference).sum(axis=1).min() > 0.99  # int8-stored weights: 0.994+
    assert (alone * batch).sum(axis=1).min() > 0.9995  # padding in a batch changes nothing
    assert embedder.embed([]).shape == (0, 384)


def test_openvino_short_texts_alone_match_the_dynamic_run():
    """A text of up to each of SHORT_TOKENS word pieces runs alone on a request compiled for
    that length, padded and masked; batched with a long text it runs at the batch's shape."""
    embedder = OpenVinoMiniLMEmbedder()
    # n words of "word" are n + 2 word pieces with [CLS] and [SEP]
    texts = [" ".join(["word"] * n) for n in
             (1, *(m for short in SHORT_TOKENS for m in (short - 3, short - 2, short - 1)))]
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    batch = embedder.embed([*texts, TEXTS[-1]])[:len(texts)]
    assert (alone * batch).sum(axis=1).min() > 0.99999


def test_default_is_openvino_when_installed_and_names_pick_runtimes():
    assert isinstance(default_embedder(), OpenVinoMiniLMEmbedder)  # the `openvino` extra
    assert default_embedder("minilm-int8") is default_embedder()
    assert set(EMBEDDERS) >= {"minilm-int8", "minilm-int8-onnx", "minilm-int8-openvino",
                              "minilm"}
    assert isinstance(default_embedder("minilm-int8-onnx"), OnnxMiniLMEmbedder)


def test_openvino_is_imported_without_its_usage_report():
    """`import openvino` alone loads openvino-telemetry, which reports the import to Google
    Analytics; the embedder imports it with OpenVINO's stub in its place (fresh process)."""
    code = ("import sys\n"
            "from rmm_core.models.embed import OpenVinoMiniLMEmbedder\n"
            "OpenVinoMiniLMEmbedder().embed(['hello'])\n"
            "import openvino.tools.ovc.utils as tools\n"
            "print(tools.tm.__name__, 'openvino_telemetry' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["openvino.tools.ovc.telemetry_stub", "False"]
