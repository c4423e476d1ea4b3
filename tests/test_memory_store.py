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


def _soup_event(rng: random.Random) -> tuple[str, str]:
    """Logs of one shared shape whose exact neighbours are near ties (like SeeAct steps)."""
    things = ["hotel room", "pickup truck", "jazz playlist", "nurse job", "flight to Rome"]
    analysis = " ".join(rng.choice(things) for _ in range(rng.randint(5, 30)))
    choices = "\n".join(f"{chr(65 + i)}. <button id={i}> {rng.choice(things)} </button>"
                        for i in range(rng.randint(3, 12)))
    return f"Task: find a {rng.choice(things)}", f"(Analysis)\n{analysis}\n(Choices)\n{choices}"


def _exact_kth(store_texts: list[str], q: str, k: int) -> int:
    return sorted(Levenshtein.distance(q, t) for t in store_texts)[k - 1]


def test_scan_returns_the_exact_levenshtein_neighbours_of_near_tie_logs(tmp_path):
    rng = random.Random(11)
    events = [_soup_event(rng) for _ in range(400)]
    demos = [Demonstration(id="", agent_input=i, agent_output=o, plan="p", code=f"# {n}",
                           label=0, details=[], request_fingerprint="fp", verified=True)
             for n, (i, o) in enumerate(events)]
    for d in demos:
        d["id"] = demonstration_id(d)
    store = MemoryStore("scan-test", path=tmp_path)
    store.add(demos)
    texts = [event_text(i, o) for i, o in events]
    for _ in range(10):
        qi, qo = _soup_event(rng)
        q = event_text(qi, qo)
        got = store.search(qi, qo, 3)
        dists = [Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"]))
                 for d in got]
        assert len(got) == 3
        assert max(dists) <= _exact_kth(texts, q, 3)  # ties with the true 3rd are not errors


def test_scan_sees_what_another_store_wrote_and_local_flag_changes(tmp_path):
    reader = MemoryStore("shared-test", path=tmp_path)
    writer = MemoryStore("shared-test", path=tmp_path)
    writer.add([_demo(1, "alpha beta")])
    assert [d["code"] for d in reader.search("input gamma", "output gamma", 1)] == ["allow('1')"]
    writer.add([_demo(2, "gamma")])
    assert [d["code"] for d in reader.search("input gamma", "output gamma", 1)] == ["allow('2')"]
    reader.add([_demo(3, "delta", verified=False)])
    assert reader.search("input delta", "output delta", 1, verified_only=True)[0]["code"] != "allow('3')"
    reader.add([_demo(3, "delta", verified=True)])  # same id, now verified
    assert reader.search("input delta", "output delta", 1, verified_only=True)[0]["code"] == "allow('3')"


def test_above_the_scan_limit_chroma_serves_the_candidates(tmp_path):
    rng = random.Random(3)
    store = MemoryStore("limit-test", path=tmp_path, scan_limit=5, candidates=20)
    demos = [_demo(i, _words(rng, rng.randint(3, 20))) for i in range(20)]
    store.add(demos)
    q_in, q_out = "input " + _words(rng, 8), "output " + _words(rng, 8)
    q = event_text(q_in, q_out)
    got = store.search(q_in, q_out, 4)
    by_id = {d["id"]: d for d in demos}
    exact = sorted(Levenshtein.distance(q, event_text(d["agent_input"], d["agent_output"]))
                   for d in demos)[:4]
    assert [Levenshtein.distance(q, event_text(by_id[d["id"]]["agent_input"],
                                               by_id[d["id"]]["agent_output"])) for d in got] == exact


def test_rerank_with_cutoffs_equals_a_full_sort():
    from guardagent.memory_store.store import rerank

    rng = random.Random(0)
    for _ in range(500):
        cands = [(f"id{rng.randint(0, 9)}-{i}", "".join(rng.choice("ab c") for _ in range(rng.randint(0, 30))), None)
                 for i in range(rng.randint(0, 40))]
        q = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 30)))
        k = rng.randint(0, 6)
        full = sorted(cands, key=lambda c: (Levenshtein.distance(q, c[1]), c[0]))[:k]
        assert rerank(q, cands, k) == full
