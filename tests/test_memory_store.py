"""Memory store: persistence, Levenshtein re-rank order, idempotent seeding, offline embedding."""

import random
import subprocess
import sys

import Levenshtein

from guardagent.memory_store import Demonstration, MemoryStore, demonstration_id
from guardagent.memory_store.seed import seed_memory
from guardagent.memory_store.store import event_text
from guardagent.profiles import load_profile


def _demo(i: int, text: str, fp: str = "fp", verified: bool = True) -> Demonstration:
    d = Demonstration(id="", agent_input=f"input {text}", agent_output=f"output {text}",
                      plan="p", code=f"allow('{i}')", label=0, details=[],
                      request_fingerprint=fp, verified=verified)
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
        key=lambda d: (Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"])),
                       d["id"]),
    )[:5]
    assert [d["id"] for d in got] == [d["id"] for d in exact]


def test_search_filters_by_request_and_verified(tmp_path):
    store = MemoryStore("filter-test", path=tmp_path)
    store.add([_demo(1, "a", fp="one"), _demo(2, "b", fp="two", verified=False)])
    assert [d["request_fingerprint"] for d in store.search("input a", "x", 5, request="one")] == ["one"]
    assert store.search("input b", "x", 5, request="two", verified_only=True) == []
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
