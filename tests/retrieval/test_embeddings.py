"""The offline embedder and the resolution of embeddings settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langmem_tiers.embeddings import DEFAULT_DIMS, OfflineEmbeddings, resolve_embeddings
from langmem_tiers.errors import ConfigurationError, EmbeddingError

TEXTS = [
    "Caroline went to an LGBTQ support group yesterday",
    "Melanie painted a sunrise over the lake in 2022",
    "",
    "!!! ...",
    "Café naïve résumé",
]


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b))


def test_vectors_have_the_dims_and_unit_norm() -> None:
    for dims in (16, 64, DEFAULT_DIMS, 1024):
        vectors = OfflineEmbeddings(dims=dims).embed_documents(TEXTS)
        assert [len(v) for v in vectors] == [dims] * len(TEXTS)
        norms = [float(np.linalg.norm(v)) for v in vectors]
        assert norms[0] == pytest.approx(1.0, abs=1e-6)
        assert norms[1] == pytest.approx(1.0, abs=1e-6)
        assert norms[4] == pytest.approx(1.0, abs=1e-6)
        # No features: the zero vector (cosine 0 with everything), never NaN.
        assert norms[2] == 0.0
        assert norms[3] == 0.0


def test_query_and_document_embeddings_agree() -> None:
    emb = OfflineEmbeddings()
    assert emb.embed_query(TEXTS[0]) == emb.embed_documents([TEXTS[0]])[0]


async def test_async_twins_return_the_same_vectors() -> None:
    emb = OfflineEmbeddings()
    assert await emb.aembed_documents(TEXTS) == emb.embed_documents(TEXTS)
    assert await emb.aembed_query(TEXTS[1]) == emb.embed_query(TEXTS[1])


def test_batches_give_the_same_vectors_as_single_texts() -> None:
    emb = OfflineEmbeddings(dims=128)
    many = [f"memory number {i} about topic {i % 7}" for i in range(2500)]
    batch = emb.embed_array(many)
    for i in (0, 1023, 1024, 2499):
        assert np.array_equal(batch[i], emb.embed_array([many[i]])[0])


_SCRIPT = """
import json, sys
from langmem_tiers.embeddings import OfflineEmbeddings
print(json.dumps(OfflineEmbeddings(dims=64).embed_documents(json.loads(sys.argv[1]))))
"""


def test_vectors_are_identical_across_processes_with_different_hash_seeds() -> None:
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, json.dumps(TEXTS)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0] == OfflineEmbeddings(dims=64).embed_documents(TEXTS)


def test_vectors_are_pinned() -> None:
    # Stored vectors must stay comparable with queries embedded by later releases: a
    # change of hashing, features or weights breaks every existing index. Change these
    # numbers only together with a migration that re-embeds.
    v = np.array(OfflineEmbeddings(dims=64).embed_query("Alps hike"))
    assert np.flatnonzero(v).tolist() == [15, 18, 34, 36, 41, 42, 45, 50, 55, 56, 63]
    assert np.round(v[np.flatnonzero(v)], 4).tolist() == [
        0.6124,
        -0.1443,
        -0.1443,
        -0.6124,
        0.1443,
        0.1443,
        0.1443,
        0.1443,
        -0.2887,
        0.1443,
        0.1443,
    ]


def test_related_texts_are_closer_than_unrelated() -> None:
    emb = OfflineEmbeddings()
    query = emb.embed_query("What did Melanie paint?")
    related = emb.embed_query("Melanie showed me her new painting of a sunrise")
    unrelated = emb.embed_query("The quarterly tax report is due on Friday")
    assert _cos(query, related) > _cos(query, unrelated) + 0.1
    # Character n-grams link inflections and compounds that stemming keeps apart.
    photo = emb.embed_query("photography")
    assert _cos(photo, emb.embed_query("photographer")) > _cos(photo, emb.embed_query("geology"))
    # Bigrams reward the phrase over the same words scattered.
    phrase = emb.embed_query("machine learning")
    in_order = emb.embed_query("she studies machine learning at night")
    scattered = emb.embed_query("learning to fix the machine at night")
    assert _cos(phrase, in_order) > _cos(phrase, scattered)


def test_identical_texts_have_cosine_one() -> None:
    emb = OfflineEmbeddings()
    a, b = emb.embed_documents([TEXTS[1], TEXTS[1]])
    assert _cos(a, b) == pytest.approx(1.0, abs=1e-6)


def test_block_weights_select_features() -> None:
    words_only = OfflineEmbeddings(bigram_weight=0.0, char_weight=0.0)
    # With word features only, different inflections of one stem are identical.
    assert words_only.embed_query("painting") == words_only.embed_query("paintings")
    # Different stems share nothing as words, but share character n-grams.
    assert _cos(words_only.embed_query("painter"), words_only.embed_query("painting")) == 0.0
    chars_only = OfflineEmbeddings(word_weight=0.0, bigram_weight=0.0)
    assert _cos(chars_only.embed_query("painter"), chars_only.embed_query("painting")) > 0.3


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dims": 8},
        {"dims": 0},
        {"dims": 64.0},
        {"dims": True},
        {"word_weight": -1.0},
        {"char_weight": float("nan")},
        {"bigram_weight": float("inf")},
    ],
)
def test_invalid_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        OfflineEmbeddings(**kwargs)  # type: ignore[arg-type]


def test_non_string_input_is_refused() -> None:
    with pytest.raises(EmbeddingError, match="index 1"):
        OfflineEmbeddings().embed_documents(["fine", 3])  # type: ignore[list-item]


def test_resolve_none_gives_the_offline_embedder() -> None:
    emb = resolve_embeddings(None)
    assert isinstance(emb, OfflineEmbeddings)
    assert emb.dims == DEFAULT_DIMS


def test_resolve_keeps_an_embeddings_instance() -> None:
    fake = DeterministicFakeEmbedding(size=8)
    assert resolve_embeddings(fake) is fake


def test_resolve_wraps_a_sync_function() -> None:
    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(t)), 1.0] for t in texts]

    emb = resolve_embeddings(embed)
    assert isinstance(emb, Embeddings)
    assert emb.embed_documents(["ab", "abc"]) == [[2.0, 1.0], [3.0, 1.0]]
    assert emb.embed_query("abcd") == [4.0, 1.0]


async def test_resolve_wraps_an_async_function() -> None:
    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(t))] for t in texts]

    emb = resolve_embeddings(embed)
    assert await emb.aembed_query("abc") == [3.0]
    assert await emb.aembed_documents(["a", "ab"]) == [[1.0], [2.0]]


def test_resolve_a_provider_string_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    emb = resolve_embeddings("openai:text-embedding-3-small")
    assert isinstance(emb, Embeddings)
    assert type(emb).__name__ == "OpenAIEmbeddings"


def test_resolve_a_provider_string_without_key_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai")
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match="openai:text-embedding-3-small"):
        resolve_embeddings("openai:text-embedding-3-small")


@pytest.mark.parametrize("spec", ["no-such-provider:model", "", "   "])
def test_resolve_refuses_bad_strings(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="embeddings"):
        resolve_embeddings(spec)


def test_resolve_refuses_other_types() -> None:
    with pytest.raises(ConfigurationError, match="int"):
        resolve_embeddings(42)  # type: ignore[arg-type]


def test_embedder_pickles_and_copies() -> None:
    import copy
    import pickle

    emb = OfflineEmbeddings(dims=64, char_weight=0.25)
    vector = emb.embed_query(TEXTS[0])
    for clone in (pickle.loads(pickle.dumps(emb)), copy.deepcopy(emb)):
        assert repr(clone) == repr(emb)
        assert clone.embed_query(TEXTS[0]) == vector
