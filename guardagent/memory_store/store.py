"""Chroma memory of demonstrations with the paper's Levenshtein re-rank.

A candidate stage narrows the memory to a few demonstrations, and the exact Levenshtein distance
on agent input + output (the paper's measure) orders those candidates. Up to `scan_limit`
demonstrations the candidates come from an in-process word-sketch scan of all of them (it keeps
the exact neighbours; ~2.4 us per demonstration); above it, from Chroma's embedding index, so
the cost grows with the candidate count, not with the memory size.

Nothing read back is believed for being there: a record is returned only when its HMAC tag
checks with the deployment's memory key (:mod:`.integrity`), and whether its program is
verified is decided in this process (the store's `verifier`), never read from the record.

A local memory keeps what Chroma said (its count, the records a search chose) under a change
token read first (:mod:`.freshness`: SQLite's `data_version` of the directory's database,
moved by any commit of any process), so a search of a memory nobody wrote to asks Chroma for
nothing, and one after anyone's write reads afresh; a memory on a server asks every time.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from bisect import insort
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import Levenshtein
from platformdirs import user_data_dir
from typing_extensions import TypedDict

if TYPE_CHECKING:  # numpy and the embedding: imported when a store opens, not with the types
    from langchain_core.embeddings import Embeddings

    from guardagent.memory_store.sketch_index import Entry

from guardagent.environment import MEMORY_DIR, value
from guardagent.memory_store.freshness import ChangeToken, Token
from guardagent.memory_store.integrity import (
    PROGRAM_TAG,
    RECORD_TAG,
    checks,
    memory_key,
    program_tag,
    record_tag,
)


class Demonstration(TypedDict):
    """One remembered event with the plan and program that guarded it.

    `details` holds the expected violations (JSON text in Chroma). `verified` says the
    program verified for its guard request: on records read back, only if it verified in
    this process (the stored flag is written for people, never read).
    """

    id: str
    agent_input: str
    agent_output: str
    plan: str
    code: str
    label: int
    details: dict[str, list[str]] | list[str]
    request_fingerprint: str
    verified: bool


def request_fingerprint(guard_request: str) -> str:
    """A stable key for a guard request: whitespace- and case-insensitive."""
    norm = " ".join(guard_request.lower().split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def demonstration_id(demo: Demonstration) -> str:
    """Content-addressed id, so seeding the same demonstration twice stores it once."""
    key = "\x00".join(
        [demo["request_fingerprint"], demo["agent_input"], demo["agent_output"], demo["code"]]
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def event_text(agent_input: str, agent_output: str) -> str:
    """What similarity is measured on (the paper: agent input + output)."""
    return f"{agent_input}\n{agent_output}"


def default_memory_dir() -> Path:
    """`$GUARDAGENT_MEMORY_DIR`, else the platform's user data directory."""
    env = value(MEMORY_DIR)
    return Path(env) if env else Path(user_data_dir("guardagent")) / "memory"


def embedding_name(embeddings: Embeddings) -> str:
    """Name of an embedding's vector space (its `name` attribute, else its class name)."""
    return str(getattr(embeddings, "name", "") or type(embeddings).__name__).lower()


def collection_name(profile: str, embedding: str) -> str:
    """A Chroma-legal collection name (3-512 of [a-zA-Z0-9._-], alnum at both ends).

    The embedding is part of the name: vectors of two embeddings must never share an index.
    """
    slug = re.sub(r"[^a-zA-Z0-9._-]+", "-", f"{profile}.{embedding}").strip("-._") or "profile"
    return f"guardagent-{slug}"[:500]


_CLIENT_LOCK = threading.Lock()
_TAG_CHECKS_KEPT = 4096  # record contents whose tag check a store remembers (then starts over)


@lru_cache(maxsize=16)
def _client(path: str | None, url: str | None) -> Any:
    import chromadb  # 0.3-0.6 s of imports: paid only when a memory is opened

    with _CLIENT_LOCK:
        if url:
            match = re.match(r"^(https?)://([^:/]+)(?::(\d+))?/?$", url)
            if not match:
                raise ValueError(f"memory_url must look like http://host:port, got {url!r}")
            scheme, host, port = match.groups()
            return chromadb.HttpClient(host=host, port=int(port or 8000), ssl=scheme == "https")
        Path(path or default_memory_dir()).mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path or default_memory_dir()))


class MemoryStore:
    """Demonstrations of one guard profile in one Chroma collection.

    Args:
        profile: Profile name; selects the collection.
        path: Directory of the embedded persistent client (default: user data dir).
        url: Chroma server URL; when given, `path` is ignored.
        embeddings: Candidate embedding; defaults to :class:`HashingEmbeddings`.
        candidates: How many candidates reach the exact Levenshtein re-rank.
        scan_limit: Up to this many stored demonstrations, candidates come from a scan of all
            of them by word-sketch distance (in-process, keeps near-tie neighbours); above it,
            from Chroma's embedding index (cost independent of the memory's size). 0 turns the
            scan off.
        key: The memory key that signs this process's records and checks everyone's
            (:func:`~guardagent.memory_store.integrity.memory_key`: else
            `$GUARDAGENT_MEMORY_KEY`, else the local directory's key file; a server URL
            with no key trusts no record).
        verifier: Whether a program verifies for this memory's profile, in this process
            (`open_memory` passes the profile's verification). Without one no program
            counts as verified.

    Raises:
        MemoryKeyError: A configured key that is too short, or an unsafe key file.
    """

    DEFAULT_CANDIDATES = 64
    DEFAULT_SCAN_LIMIT = 5_000
    PROGRAM_CACHE_SECONDS = 5.0

    def __init__(
        self,
        profile: str,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        embeddings: Embeddings | None = None,
        candidates: int | None = None,
        scan_limit: int | None = None,
        key: str | bytes | None = None,
        verifier: Callable[[str], bool] | None = None,
    ) -> None:
        from guardagent.memory_store.embeddings import HashingEmbeddings
        from guardagent.memory_store.sketch_index import SketchIndex

        self.embeddings = embeddings or HashingEmbeddings()
        self.candidates = candidates or self.DEFAULT_CANDIDATES
        self.scan_limit = self.DEFAULT_SCAN_LIMIT if scan_limit is None else scan_limit
        client = _client(str(path) if path else None, url)
        self._key = memory_key(key, None if url else Path(path or default_memory_dir()), url)
        self._verifier = verifier
        self._verdicts: dict[str, bool] = {}
        self._tag_checks: dict[tuple[Any, ...], bool] = {}  # record content -> tag checks
        self._index = SketchIndex(self._signed)
        self._programs: dict[str, tuple[float, list[str]]] = {}
        # What Chroma said, kept under the change token read before asking (local only).
        self._changed = None if url else ChangeToken(path or default_memory_dir())
        self._synced: tuple[Token, bool] | None = None  # load_index's answer at a token
        self._fresh: tuple[Token | None, dict[str, tuple[Any, Any] | None]] = (None, {})
        self._fresh_lock = threading.Lock()
        self._collection = client.get_or_create_collection(
            collection_name(profile, embedding_name(self.embeddings)),
            embedding_function=None,
            metadata={"hnsw:space": getattr(self.embeddings, "space", "cosine")},
        )

    @property
    def signed(self) -> bool:
        """Whether this store has a key: without one it writes untagged and trusts nothing."""
        return self._key is not None

    def count(self) -> int:
        """Number of stored demonstrations (trusted or not)."""
        return int(self._collection.count())

    def load_index(self) -> bool:
        """Bring the scan's in-process index up to date (loading it on first use).

        Returns whether the memory is small enough to be scanned. Call it at start-up so the
        first search does not pay for the load (~0.2 s per 1k demonstrations). A local memory
        nobody wrote to since the last call (its change token, :mod:`.freshness`, has not
        moved) is in step already: Chroma is not asked.
        """
        return self._load_index(self._changed() if self._changed else None)

    def _load_index(self, token: Token | None) -> bool:
        """:meth:`load_index` at `token`, read before anything is asked of Chroma."""
        synced = self._synced
        if token is not None and synced is not None and synced[0] == token:
            return synced[1]
        count = self.count()
        if count > self.scan_limit:
            self._index = type(self._index)(self._signed)  # Chroma's index serves: free the scan
            scanning = False
        else:
            self._index.sync(self._collection, count)
            scanning = True
        self._synced = None if token is None else (token, scanning)
        return scanning

    def current(self) -> bool:
        """Whether a local memory is in step with its database now (nobody wrote since).

        Then a search reads at most the few chosen records from the local database (none
        when it read them since the last write): cheap enough for an event loop. A shared
        memory (a server) is never current: every search asks it.
        """
        token = self._changed() if self._changed else None
        synced = self._synced
        return token is not None and synced is not None and synced[0] == token

    def add(self, demos: list[Demonstration]) -> list[str]:
        """Insert or update demonstrations (idempotent by content id); returns their ids.

        Each record is tagged with this store's key (untagged without one). Records already
        stored exactly so are not written again: Chroma logs every upsert, so re-seeding the
        same demonstrations at each start would grow the memory on disk with nothing new.
        """
        if not demos:
            return []
        ids = [d["id"] or demonstration_id(d) for d in demos]
        texts = [event_text(d["agent_input"], d["agent_output"]) for d in demos]
        metadatas = [_to_metadata(d, self._key) for d in demos]
        stored = self._collection.get(ids=ids, include=["documents", "metadatas"])
        same = {
            i
            for i, doc, meta in zip(
                stored["ids"], stored["documents"] or [], stored["metadatas"] or [], strict=False
            )
            if (doc, dict(meta or {})) == _record(ids, texts, metadatas, i)
        }
        changed = [n for n, i in enumerate(ids) if i not in same]
        if changed:
            self._collection.upsert(
                ids=[ids[n] for n in changed],
                embeddings=self.embeddings.embed_documents([texts[n] for n in changed]),
                documents=[texts[n] for n in changed],
                metadatas=[metadatas[n] for n in changed],
            )
            self._programs.clear()
        if self.count() <= self.scan_limit:
            self._index.put(ids, texts, metadatas)
        return ids

    def search(
        self,
        agent_input: str,
        agent_output: str,
        k: int,
        *,
        request: str | None = None,
        verified_only: bool = False,
    ) -> list[Demonstration]:
        """Top-k trusted demonstrations: candidates, then exact Levenshtein order.

        Candidates come from the word-sketch scan while the memory holds at most `scan_limit`
        demonstrations, else from Chroma's embedding index. Only records whose integrity tag
        checks are considered.

        Args:
            agent_input: The event's input.
            agent_output: The event's output.
            k: How many to return.
            request: Restrict to demonstrations of this guard-request fingerprint.
            verified_only: Restrict to demonstrations whose program verifies in this process.
        """
        if k <= 0 or self._key is None:
            return []
        query = event_text(agent_input, agent_output)
        depth = max(self.candidates, k)
        where = _where(request)
        token = self._changed() if self._changed else None  # one read serves the search
        if self._load_index(token):
            accept = self._verified_entry if verified_only else None
            pool = self._index.nearest(query, depth, request=request, accept=accept)
            ids = [i for i, _, _ in rerank(query, [(i, doc, None) for i, doc in pool], k)]
            ranked = self._records(ids, where, token)
        else:
            found = self._collection.query(
                query_embeddings=[self.embeddings.embed_query(query)],
                n_results=depth,  # Chroma returns fewer when it holds fewer
                where=where,
                include=["documents", "metadatas"],
            )
            docs = (found.get("documents") or [[]])[0]
            metas = (found.get("metadatas") or [[]])[0]
            candidates = [
                (i, doc, meta)
                for i, doc, meta in zip(found["ids"][0], docs, metas, strict=True)
                if self._signed(doc, meta)
                and (not verified_only or self._verified(str(meta.get("code", ""))))
            ]
            ranked = rerank(query, candidates, k)
        out = []
        for demo_id, doc, meta in ranked:
            if not self._signed(doc, meta):  # rewritten since it was indexed
                continue
            code = str(meta["code"])
            verified = self._verified(code) if verified_only else self._verdicts.get(code, False)
            if verified_only and not verified:
                continue
            out.append(_from_record(demo_id, doc, meta, verified))
        return out

    def _records(
        self, ids: list[str], where: dict[str, Any] | None, token: Token | None
    ) -> list[tuple[str, Any, Any]]:
        """(id, document, metadata) of `ids` in their order, filtered again on fresh metadata.

        A local memory keeps the records it read under the change token it read before
        asking (:mod:`.freshness`): while the token stands, nobody has committed to the
        database since, so the kept records are what Chroma would return (the request filter
        is applied here, as Chroma's `where` would). Bounded by the memory's scan limit; any
        write by anyone drops them all. `token` is the one the search read before it asked
        Chroma anything (None: a memory that has none, asked every time).
        """
        if not ids:
            return []
        if token is None or (where is not None and set(where) != {"request_fingerprint"}):
            got = self._collection.get(ids=ids, where=where, include=["documents", "metadatas"])
            found = zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True)
            by_id = {i: (i, doc, meta) for i, doc, meta in found}
            return [by_id[i] for i in ids if i in by_id]
        with self._fresh_lock:
            at, kept = self._fresh
            if at != token or len(kept) > max(self.scan_limit, 1024):
                kept = {}
                self._fresh = (token, kept)
            missing = [i for i in dict.fromkeys(ids) if i not in kept]
        if missing:
            got = self._collection.get(ids=missing, include=["documents", "metadatas"])
            fetched: dict[str, tuple[Any, Any] | None] = dict.fromkeys(missing)
            rows = zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True)
            fetched.update((i, (doc, meta)) for i, doc, meta in rows)
            with self._fresh_lock:
                if self._fresh[0] == token:  # else a newer token's records: keep them apart
                    self._fresh[1].update(fetched)
            kept = {**kept, **fetched}
        wanted = None if where is None else where.get("request_fingerprint")
        out = []
        for i in ids:
            record = kept.get(i)
            if record is None:
                continue
            doc, meta = record
            if wanted is None or (
                isinstance(meta, dict) and meta.get("request_fingerprint") == wanted
            ):
                out.append((i, doc, meta))
        return out

    def programs_known(self, request: str) -> bool:
        """Whether :meth:`verified_programs` would answer from what it holds.

        Then it reads nothing of the memory and verifies no program: every signed program of
        the request has its verdict here.
        """
        cached = self._programs.get(request)
        return cached is not None and time.monotonic() - cached[0] < self.PROGRAM_CACHE_SECONDS

    def verified_programs(self, request: str) -> list[str]:
        """The distinct programs of a guard request that are signed and verify here.

        Most requests have one general program, and then no per-event retrieval is needed to
        pick it. Cached in-process; refreshed after this process adds demonstrations and every
        `PROGRAM_CACHE_SECONDS`, so programs added by other processes appear soon after.
        """
        now = time.monotonic()
        cached = self._programs.get(request)
        if cached and now - cached[0] < self.PROGRAM_CACHE_SECONDS:
            return cached[1]
        codes: list[str] = []
        if self._key is not None and self._verifier is not None:
            found = self._collection.get(where=_where(request), include=["metadatas"])
            signed = {
                str(m["code"])
                for m in found.get("metadatas") or []
                if m and isinstance(m.get("code"), str) and self._program_signed(m, request)
            }
            codes = sorted(c for c in signed if self._verified(c))
        self._programs[request] = (now, codes)
        return codes

    # -- integrity and local verification

    def _signed(self, document: Any, meta: Any) -> bool:
        """Whether a record's tag checks over its whole content (remembered by that content).

        Every search checks the tags of the records it returns, mostly the same few records
        each time: the answer is a function of the content alone (and of this store's key),
        so it is kept under the whole content, never under an id a rewrite could keep.
        """
        key = self._key
        if key is None or not isinstance(document, str) or not isinstance(meta, dict):
            return False
        try:
            content = (document, *sorted(meta.items()))
            hash(content)
        except TypeError:  # a metadata value that is not a Chroma scalar
            return False
        known = self._tag_checks.get(content)
        if known is None:
            if len(self._tag_checks) >= _TAG_CHECKS_KEPT:
                self._tag_checks.clear()
            known = self._tag_checks[content] = _tag_checks_out(key, document, meta)
        return known

    def _program_signed(self, meta: dict[str, Any], request: str) -> bool:
        if self._key is None:
            return False
        expected = program_tag(self._key, code=str(meta["code"]), request=request)
        return checks(expected, meta.get(PROGRAM_TAG))

    def _verified(self, code: str) -> bool:
        """Whether `code` verifies for this memory's profile, decided here (and remembered)."""
        if self._verifier is None:
            return False
        if code not in self._verdicts:
            self._verdicts[code] = bool(self._verifier(code))
        return self._verdicts[code]

    def _verified_entry(self, entry: Entry) -> bool:
        return self._verified(entry.code)


def _tag_checks_out(key: bytes, document: str, meta: dict[str, Any]) -> bool:
    """Whether a record's integrity tag is the one `key` gives its content."""
    try:
        split = int(meta["input_chars"])
        expected = record_tag(
            key,
            agent_input=document[:split],
            agent_output=document[split + 1 :],
            plan=str(meta["plan"]),
            code=str(meta["code"]),
            label=int(meta["label"]),
            details=json.loads(meta["details"]),
            request=str(meta["request_fingerprint"]),
        )
    except (KeyError, TypeError, ValueError):
        return False
    return checks(expected, meta.get(RECORD_TAG))


def rerank(
    query: str, candidates: list[tuple[str, Any, Any]], k: int
) -> list[tuple[str, Any, Any]]:
    """Order (id, document, metadata) candidates by Levenshtein distance to `query`; ties by id.

    Once k candidates are in hand, the k-th best distance is a cut-off: a candidate beyond it
    costs a fraction of a full distance, and the top k come out as a full sort would give them.
    """
    if k <= 0:
        return []
    best: list[tuple[int, str, int]] = []  # (distance, id, position in candidates)
    for n, (cid, doc, _) in enumerate(candidates):
        cutoff = best[-1][0] if len(best) == k else None
        dist = Levenshtein.distance(query, doc or "", score_cutoff=cutoff)
        if cutoff is None or (dist, cid) < best[-1][:2]:
            insort(best, (dist, cid, n))
            del best[k:]
    return [candidates[n] for _, _, n in best]


def _record(
    ids: list[str], texts: list[str], metadatas: list[dict[str, Any]], wanted: str
) -> tuple[str, dict[str, Any]] | None:
    """(document, metadata) that `add` would write for id `wanted` (the last one wins)."""
    for i, text, meta in zip(reversed(ids), reversed(texts), reversed(metadatas), strict=True):
        if i == wanted:
            return text, meta
    return None


def _where(request: str | None) -> dict[str, Any] | None:
    # Chroma filters only on what is harmless to believe (a record with a forged request
    # field is still checked by its tag); nothing about trust or verification is filtered here.
    return {"request_fingerprint": request} if request else None


def _to_metadata(d: Demonstration, key: bytes | None) -> dict[str, Any]:
    # The document already holds input + output; only the split point is kept here.
    meta: dict[str, Any] = {
        "input_chars": len(d["agent_input"]),
        "plan": d["plan"],
        "code": d["code"],
        "label": int(d["label"]),
        "details": json.dumps(d["details"]),
        "request_fingerprint": d["request_fingerprint"],
        "verified": bool(d["verified"]),  # for people reading the store; never read back
    }
    if key is not None:
        meta[RECORD_TAG] = record_tag(
            key,
            agent_input=d["agent_input"],
            agent_output=d["agent_output"],
            plan=d["plan"],
            code=d["code"],
            label=int(d["label"]),
            details=json.loads(meta["details"]),
            request=d["request_fingerprint"],
        )
        meta[PROGRAM_TAG] = program_tag(key, code=d["code"], request=d["request_fingerprint"])
    return meta


def _from_record(demo_id: str, document: str, meta: Any, verified: bool) -> Demonstration:
    split = int(meta["input_chars"])
    return Demonstration(
        id=demo_id,
        agent_input=document[:split],
        agent_output=document[split + 1 :],
        plan=str(meta["plan"]),
        code=str(meta["code"]),
        label=int(meta["label"]),
        details=json.loads(meta["details"]),
        request_fingerprint=str(meta["request_fingerprint"]),
        verified=verified,
    )
