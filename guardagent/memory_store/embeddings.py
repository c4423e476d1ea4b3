"""An offline embedding for candidate retrieval.

Chroma's default embedding downloads an ONNX model at first use and fails with no network.
Retrieval here is re-ranked by Levenshtein distance, so the candidate embedding should
approximate edit-distance neighbourhoods rather than meaning: hashed character n-gram counts do
that, cost microseconds, and need no model file. Any LangChain `Embeddings` can replace it.
"""

from __future__ import annotations

import math
import zlib

from langchain_core.embeddings import Embeddings


class HashingEmbeddings(Embeddings):
    """L2-normalised, sqrt-damped counts of hashed character n-grams.

    Args:
        dim: Vector size; collisions fall as it grows.
        ngram: Character n-gram length.
        max_chars: Text beyond this length is ignored (agent logs can be long; their heads and
            structure dominate similarity anyway).
    """

    def __init__(self, dim: int = 512, ngram: int = 3, max_chars: int = 8000) -> None:
        self.dim = dim
        self.ngram = ngram
        self.max_chars = max_chars

    def _embed(self, text: str) -> list[float]:
        text = " ".join(text[: self.max_chars].lower().split())
        vec = [0.0] * self.dim
        n = self.ngram
        for i in range(max(1, len(text) - n + 1)):
            vec[zlib.crc32(text[i : i + n].encode("utf-8")) % self.dim] += 1.0
        vec = [math.sqrt(v) for v in vec]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed several texts."""
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text."""
        return self._embed(text)
