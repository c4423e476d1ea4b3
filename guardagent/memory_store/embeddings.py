"""An offline embedding for candidate retrieval.

Chroma's default embedding downloads an ONNX model at first use and fails with no network.
Retrieval here is re-ranked by Levenshtein distance, so the candidate embedding should
approximate edit-distance neighbourhoods rather than meaning. Raw counts of hashed character
n-grams do that: one edit changes at most 2n counts, so the L1/L2 distance between count vectors
tracks edit distance (including length differences, which normalised vectors would hide). They
cost tens of microseconds (vectorised with numpy) and need no model file. Any LangChain
`Embeddings` can replace it.
"""

from __future__ import annotations

import numpy as np
from langchain_core.embeddings import Embeddings

_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads n-gram codes over buckets


class HashingEmbeddings(Embeddings):
    """Counts of hashed character n-grams, compared with L2 distance (not cosine).

    Args:
        dim: Vector size; collisions fall as it grows, index cost rises.
        ngram: Character n-gram length (bytes of the lowercased UTF-8 text).
        max_chars: Text beyond this length is ignored (agent logs can be long; their heads and
            structure dominate similarity anyway).
    """

    def __init__(self, dim: int = 256, ngram: int = 3, max_chars: int = 8000) -> None:
        self.dim = dim
        self.ngram = ngram
        self.max_chars = max_chars
        self.space = "l2"

    @property
    def name(self) -> str:
        """Identifies the vector space, so memories built with another embedding never mix."""
        return f"hashcount{self.ngram}x{self.dim}"

    def _embed(self, text: str) -> list[float]:
        data = " ".join(text[: self.max_chars].lower().split()).encode("utf-8")
        raw = np.frombuffer(data, dtype=np.uint8).astype(np.uint64)
        if raw.size < self.ngram:
            raw = np.concatenate([raw, np.zeros(self.ngram - raw.size, dtype=np.uint64)])
        codes = np.zeros(raw.size - self.ngram + 1, dtype=np.uint64)
        for i in range(self.ngram):
            codes = (codes << np.uint64(8)) | raw[i : raw.size - self.ngram + 1 + i]
        buckets = ((codes * _MULT) >> np.uint64(40)) % np.uint64(self.dim)
        vec = np.bincount(buckets.astype(np.int64), minlength=self.dim).astype(np.float64)
        return vec.tolist()  # type: ignore[no-any-return]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed several texts."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text."""
        return self._embed(text)
