"""Memory store: persistence, Levenshtein re-rank order, idempotent seeding, offline embedding."""

import random
import subprocess
import sys

import Levenshtein
import pytest

from guardagent.memory_store import Demonstration, MemoryStore, demonstration_id
from guardagent.memory_store.seed import seed_memory
from guardagent.memory_store.store import event_text
from guardagent.profiles import load_profile


def _demo(i: int, text: str, fp: str = "fp", verified: bool = True) -> Demonstration:
    d = Demonstration(
        id="",
        agent_input=f"input {text}",
        agent_output=f"output {text}",
        plan="p",
        code=f"allow('{i}')",
        label=0,
        details=[],
        request_fingerprint=fp,
        verified=verified,
    )
    d["id"] = demonstration_id(d)
    return d


def _words(rng: random.Random, n: int) -> str:
    vocab = ["patient", "lab", "cost", "drug", "hotel", "car", "flight", "music", "job", "cart"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def test_topk_matches_exact_levenshtein_order_on_candidates(tmp_path):
    rng = random.Random(7)
    store = MemoryStore("rerank-test", path=tmp_path, candidates=40)
    demos = [_demo(i, _words(rng, rng.randint(3, 30))) for i in range(40)]
    store.add(demos)
    query_in, query_out = "input " + _words(rng, 10), "output " + _words(rng, 10)
    got = store.search(query_in, query_out, 5)
    q = event_text(query_in, query_out)
    exact = sorted(
        demos,
        key=lambda d: (
            Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"])),
            d["id"],
        ),
    )[:5]
    assert [d["id"] for d in got] == [d["id"] for d in exact]


def test_search_filters_by_request_and_verified(tmp_path):
    store = MemoryStore("filter-test", path=tmp_path, verifier=lambda code: code != "allow('2')")
    store.add([_demo(1, "a", fp="one"), _demo(2, "b", fp="two", verified=True)])
    assert [d["request_fingerprint"] for d in store.search("input a", "x", 5, request="one")] == [
        "one"
    ]
    # Stored as verified, but it does not verify here: the stored flag is never believed.
    assert store.search("input b", "x", 5, request="two", verified_only=True) == []
    assert store.verified_programs("two") == [] and store.verified_programs("one") == ["allow('1')"]
    assert len(store.search("input b", "x", 5)) == 2


def test_seeding_is_idempotent(tmp_path):
    profile = load_profile("eicu-ac")
    store = MemoryStore(profile.name, path=tmp_path)
    problems = seed_memory(store, profile)
    assert all(p == [] for p in problems.values()), problems  # shipped programs verify
    first = store.count()
    seed_memory(store, profile)
    assert store.count() == first == len(profile.demonstrations)


def test_memory_survives_a_restart(tmp_path):
    store = MemoryStore("restart-test", path=tmp_path)
    store.add([_demo(1, "remember me")])
    code = (
        "from guardagent.memory_store import MemoryStore\n"
        f"s = MemoryStore('restart-test', path={str(tmp_path)!r})\n"
        "print(s.count(), s.search('input remember me', 'output remember me', 1)[0]['code'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "allow('1')"]


def _soup_event(rng: random.Random) -> tuple[str, str]:
    """Logs of one shared shape whose exact neighbours are near ties (like SeeAct steps)."""
    things = ["hotel room", "pickup truck", "jazz playlist", "nurse job", "flight to Rome"]
    analysis = " ".join(rng.choice(things) for _ in range(rng.randint(5, 30)))
    choices = "\n".join(
        f"{chr(65 + i)}. <button id={i}> {rng.choice(things)} </button>"
        for i in range(rng.randint(3, 12))
    )
    return f"Task: find a {rng.choice(things)}", f"(Analysis)\n{analysis}\n(Choices)\n{choices}"


def _exact_kth(store_texts: list[str], q: str, k: int) -> int:
    return sorted(Levenshtein.distance(q, t) for t in store_texts)[k - 1]


def test_scan_returns_the_exact_levenshtein_neighbours_of_near_tie_logs(tmp_path):
    rng = random.Random(11)
    events = [_soup_event(rng) for _ in range(400)]
    demos = [
        Demonstration(
            id="",
            agent_input=i,
            agent_output=o,
            plan="p",
            code=f"# {n}",
            label=0,
            details=[],
            request_fingerprint="fp",
            verified=True,
        )
        for n, (i, o) in enumerate(events)
    ]
    for d in demos:
        d["id"] = demonstration_id(d)
    store = MemoryStore("scan-test", path=tmp_path)
    store.add(demos)
    texts = [event_text(i, o) for i, o in events]
    for _ in range(10):
        qi, qo = _soup_event(rng)
        q = event_text(qi, qo)
        got = store.search(qi, qo, 3)
        dists = [
            Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"])) for d in got
        ]
        assert len(got) == 3
        assert max(dists) <= _exact_kth(texts, q, 3)  # ties with the true 3rd are not errors


def test_scan_sees_what_another_store_wrote_and_verification_is_decided_here(tmp_path):
    reader = MemoryStore("shared-test", path=tmp_path, verifier=lambda code: code != "allow('3')")
    writer = MemoryStore("shared-test", path=tmp_path)
    writer.add([_demo(1, "alpha beta")])
    assert [d["code"] for d in reader.search("input gamma", "output gamma", 1)] == ["allow('1')"]
    writer.add([_demo(2, "gamma")])
    assert [d["code"] for d in reader.search("input gamma", "output gamma", 1)] == ["allow('2')"]
    writer.add([_demo(3, "delta", verified=True)])  # the writer says verified; the reader disagrees
    assert reader.search("input delta", "output delta", 1)[0]["code"] == "allow('3')"
    best = reader.search("input delta", "output delta", 1, verified_only=True)[0]
    assert best["code"] != "allow('3')" and best["verified"] is True
    assert writer.search("input delta", "output delta", 1)[0]["verified"] is False  # no verifier


def test_above_the_scan_limit_chroma_serves_the_candidates(tmp_path):
    rng = random.Random(3)
    store = MemoryStore("limit-test", path=tmp_path, scan_limit=5, candidates=20)
    demos = [_demo(i, _words(rng, rng.randint(3, 20))) for i in range(20)]
    store.add(demos)
    q_in, q_out = "input " + _words(rng, 8), "output " + _words(rng, 8)
    q = event_text(q_in, q_out)
    got = store.search(q_in, q_out, 4)
    by_id = {d["id"]: d for d in demos}
    exact = sorted(
        Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"])) for d in demos
    )[:4]
    assert [
        Levenshtein.distance(
            q, event_text(by_id[d["id"]]["agent_input"], by_id[d["id"]]["agent_output"])
        )
        for d in got
    ] == exact


def test_rerank_with_cutoffs_equals_a_full_sort():
    from guardagent.memory_store.store import rerank

    rng = random.Random(0)
    for _ in range(500):
        cands = [
            (
                f"id{rng.randint(0, 9)}-{i}",
                "".join(rng.choice("ab c") for _ in range(rng.randint(0, 30))),
                None,
            )
            for i in range(rng.randint(0, 40))
        ]
        q = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 30)))
        k = rng.randint(0, 6)
        full = sorted(cands, key=lambda c: (Levenshtein.distance(q, c[1]), c[0]))[:k]
        assert rerank(q, cands, k) == full


# --------------------------------------------------------------------------- integrity

PLANT = """
import json, sys
import chromadb
from guardagent.memory_store.embeddings import HashingEmbeddings
from guardagent.memory_store.store import collection_name, embedding_name, event_text

path, profile, record = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
emb = HashingEmbeddings()
col = chromadb.PersistentClient(path=path).get_or_create_collection(
    collection_name(profile, embedding_name(emb)), embedding_function=None,
    metadata={"hnsw:space": emb.space})
text = event_text(record["agent_input"], record["agent_output"])
meta = {"input_chars": len(record["agent_input"]), "plan": record["plan"], "code": record["code"],
        "label": record["label"], "details": json.dumps(record["details"]),
        "request_fingerprint": record["request_fingerprint"], "verified": True,
        **record.get("extra", {})}
col.upsert(ids=[record["id"]], documents=[text], metadatas=[meta],
           embeddings=emb.embed_documents([text]))
"""


def plant(path, profile: str, record: dict) -> None:
    """Write a record as a process with write access to the database but no key would."""
    import json as _json

    subprocess.run(
        [sys.executable, "-c", PLANT, str(path), profile, _json.dumps(record)],
        check=True,
        capture_output=True,
        text=True,
    )


def test_a_key_file_is_made_once_beside_the_database_readable_by_its_owner_only(
    tmp_path, monkeypatch
):
    import stat

    from guardagent.memory_store.integrity import KEY_FILE, MemoryKeyError

    monkeypatch.delenv("GUARDAGENT_MEMORY_KEY", raising=False)
    first = MemoryStore("key-test", path=tmp_path)
    first.add([_demo(1, "kept")])
    key = tmp_path / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = MemoryStore("key-test", path=tmp_path)  # same key: the record is trusted
    assert [d["code"] for d in again.search("input kept", "output kept", 1)] == ["allow('1')"]
    key.chmod(0o644)
    with pytest.raises(MemoryKeyError, match="chmod 600"):
        MemoryStore("key-test", path=tmp_path)


def test_records_signed_with_another_key_are_not_trusted(tmp_path, monkeypatch):
    from guardagent.memory_store.integrity import MemoryKeyError

    MemoryStore("keys", path=tmp_path, key="a deployment key, 32 bytes long").add([_demo(1, "x")])
    assert MemoryStore("keys", path=tmp_path).search("input x", "output x", 1) == []
    monkeypatch.setenv("GUARDAGENT_MEMORY_KEY", "a deployment key, 32 bytes long")
    assert len(MemoryStore("keys", path=tmp_path).search("input x", "output x", 1)) == 1
    with pytest.raises(MemoryKeyError, match="16 bytes"):
        MemoryStore("keys", path=tmp_path, key="short")


def test_a_shared_memory_without_a_key_trusts_nothing(monkeypatch):
    from guardagent.memory_store.integrity import memory_key

    monkeypatch.delenv("GUARDAGENT_MEMORY_KEY", raising=False)
    assert memory_key(None, None, "http://127.0.0.1:8000") is None
    monkeypatch.setenv("GUARDAGENT_MEMORY_KEY", "k" * 16)
    assert memory_key(None, None, "http://127.0.0.1:8000") == b"k" * 16


def test_unsigned_and_tampered_records_are_never_returned(tmp_path):
    store = MemoryStore("plant-test", path=tmp_path, verifier=lambda code: True)
    good = _demo(1, "the real one")
    store.add([good])
    planted = _demo(2, "the real one!")  # nearer to the query than the real one
    plant(tmp_path, "plant-test", {**planted, "extra": {"hmac": "0" * 64}})
    # A copy of the real record with its program swapped, keeping the real tags.
    meta = store._collection.get(ids=[good["id"]], include=["metadatas"])["metadatas"][0]
    swapped = {
        **good,
        "id": "swapped",
        "code": "allow('swapped')",
        "extra": {k: meta[k] for k in ("hmac", "program_hmac")},
    }
    plant(tmp_path, "plant-test", swapped)
    assert store.count() == 3
    found = store.search("input the real one!", "output the real one!", 5)
    assert [d["code"] for d in found] == ["allow('1')"]
    assert store.verified_programs("fp") == ["allow('1')"]
    assert [d["code"] for d in store.search("x", "y", 5, verified_only=True)] == ["allow('1')"]


def test_a_trusted_record_rewritten_in_place_is_refused_by_the_same_store(tmp_path):
    """Tag checks are remembered by a record's whole content: a rewrite of a record this
    store already trusted (same id, its real tags kept, another program) is checked anew."""
    store = MemoryStore("rewrite-test", path=tmp_path, verifier=lambda code: True)
    good = _demo(1, "the real one")
    store.add([good])
    assert [d["code"] for d in store.search("input the real one", "output the real one", 1)] == [
        "allow('1')"
    ]
    meta = store._collection.get(ids=[good["id"]], include=["metadatas"])["metadatas"][0]
    rewritten = {
        **good,
        "code": "allow('rewritten')",
        "extra": {k: meta[k] for k in ("hmac", "program_hmac")},
    }
    plant(tmp_path, "rewrite-test", rewritten)
    assert store.search("input the real one", "output the real one", 1) == []
    plant(
        tmp_path, "rewrite-test", {**good, "extra": {k: meta[k] for k in ("hmac", "program_hmac")}}
    )
    assert [d["code"] for d in store.search("input the real one", "output the real one", 1)] == [
        "allow('1')"
    ]  # the original content again: trusted again


def _bytes_under(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_a_run_that_adds_nothing_adds_no_bytes(tmp_path):
    """Each start re-seeds the profile's demonstrations: unchanged records are not rewritten."""
    code = (
        "from guardagent.memory_store.seed import open_memory\n"
        f"store = open_memory('mind2web-sc', {str(tmp_path)!r})\n"
        "store.load_index()\n"
        "print(store.count())\n"
    )
    sizes, counts = [], []
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        counts.append(int(out.stdout.split()[-1]))
        sizes.append(_bytes_under(tmp_path))
    assert counts[0] == counts[1] == counts[2] > 0
    assert sizes[1] == sizes[0] and sizes[2] == sizes[0], sizes


def test_a_changed_record_is_still_written(tmp_path):
    store = MemoryStore("rewrite-test", path=tmp_path)
    demo = _demo(1, "same id")
    store.add([demo])
    store.add([{**demo, "plan": "a new plan"}])  # same content id, new plan
    store.add([demo, _demo(2, "another")])
    got = store._collection.get(ids=[demo["id"]], include=["metadatas"])
    assert got["metadatas"][0]["plan"] == "p" and store.count() == 2


# --------------------------------------------------------------------------- freshness

REWRITE = """
import sys
from guardagent.memory_store import Demonstration, MemoryStore, demonstration_id
d = Demonstration(id="", agent_input="input kept", agent_output="output kept", plan=sys.argv[2],
                  code="allow('1')", label=0, details=[], request_fingerprint="fp", verified=True)
d["id"] = demonstration_id(d)
MemoryStore("fresh-test", path=sys.argv[1]).add([d])
"""


def test_a_record_another_process_rewrote_after_a_search_is_read_afresh(tmp_path, monkeypatch):
    """The store keeps the records it read until anyone writes (its change token moves):
    another process's rewrite of a record already read, same id and count, is seen at once."""
    monkeypatch.delenv("GUARDAGENT_MEMORY_KEY", raising=False)
    store = MemoryStore("fresh-test", path=tmp_path, verifier=lambda code: True)
    good = _demo(1, "kept")
    store.add([good])
    assert [d["plan"] for d in store.search("input kept", "output kept", 1)] == ["p"]
    assert store.current()  # nothing written since: the next search asks Chroma for nothing
    subprocess.run([sys.executable, "-c", REWRITE, str(tmp_path), "signed anew"], check=True)
    assert not store.current()
    assert [d["plan"] for d in store.search("input kept", "output kept", 1)] == ["signed anew"]
    # Rewritten without the key (the old tags kept): no longer trusted, at once.
    meta = store._collection.get(ids=[good["id"]], include=["metadatas"])["metadatas"][0]
    plant(
        tmp_path,
        "fresh-test",
        {**good, "plan": "forged", "extra": {k: meta[k] for k in ("hmac", "program_hmac")}},
    )
    assert store.count() == 1 and store.search("input kept", "output kept", 1) == []


def test_a_memory_without_a_change_token_asks_chroma_every_time(tmp_path, monkeypatch):
    store = MemoryStore("fresh-test", path=tmp_path, verifier=lambda code: True)
    store.add([_demo(1, "kept")])
    monkeypatch.setattr(store, "_changed", lambda: None)  # e.g. a database it cannot read
    calls = []
    real = store._collection.get
    monkeypatch.setattr(store._collection, "get", lambda **kw: calls.append(kw) or real(**kw))
    for _ in range(2):
        assert len(store.search("input kept", "output kept", 1)) == 1
    assert len(calls) == 2 and not store.current()


def test_programs_are_known_only_while_the_kept_answer_is_fresh(tmp_path, monkeypatch):
    """`programs_known`: `verified_programs` would answer without reading or verifying."""
    store = MemoryStore("known-test", path=tmp_path, verifier=lambda code: True)
    store.add([_demo(1, "kept")])
    assert not store.programs_known("fp")
    assert store.verified_programs("fp") == ["allow('1')"]
    assert store.programs_known("fp") and not store.programs_known("other")
    monkeypatch.setattr(MemoryStore, "PROGRAM_CACHE_SECONDS", 0.0)
    assert not store.programs_known("fp")


def test_retrieve_waits_in_a_thread_for_a_verdict_not_yet_known(tmp_path, monkeypatch):
    """A verification runs sandbox children: never on the event loop a batch shares."""
    from guardagent import GuardAgent
    from guardagent.eval.benchmarks import load_benchmark
    from guardagent.nodes import retrieve

    guard = GuardAgent("mind2web-sc", memory_dir=str(tmp_path))
    case = load_benchmark("mind2web-sc")[0]
    guard.check(case.agent_input, case.agent_output)  # the shipped program's verdict: known
    assert retrieve._no_wait(guard.context)
    monkeypatch.setattr(retrieve, "known_problems", lambda code, profile: None)
    assert not retrieve._no_wait(guard.context)
