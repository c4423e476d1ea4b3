"""One hot thread: what a thread decision and its idempotency key cost the database (issue 35
item 9, issue 38 item 4).

A keyed decision on a thread costs one more row (its key, written in the decision's
transaction) and one lookup, not a second lock; requests on one thread inside one replica take
turns in the replica (handing the thread's lock on), not each on the database's lock; and a
decision writes its checkpoint without LangGraph's update machinery (no reads inside the write
transaction, no pending-write rows). Counted as SQL statements sent (independent of the
machine's load); correctness (one line per thread, one decision per key) is checked beside,
across two replicas. Replicas are two sets of stores in this process on one PostgreSQL from
the machine's binaries (skipped, saying why, where absent).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from guardagent.context import GuardContext
from guardagent.service.decider import Answer, Decider
from guardagent.service.requests import parse_request
from guardagent.service.settings import ServiceSettings
from guardagent.service.stores import open_stores
from tests.pg_server import PostgresUnavailable, running_postgres

MESSAGES = json.loads((Path(__file__).parent / "traces" / "i02_exfil_langchain.json").read_text())[
    "messages"
]


@pytest.fixture(scope="module")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        with running_postgres(tmp_path_factory.mktemp("hot")) as url:
            yield url
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL for the hot-thread tests: {exc}")


@asynccontextmanager
async def replica(url: str, memory: Path, pool_size: int = 4) -> AsyncIterator[Decider]:
    settings = ServiceSettings(
        guard=GuardContext(profile="assistant-trace", memory_dir=str(memory)),
        database_url=url,
        pool_size=pool_size,
        lock_wait_seconds=20.0,
    )
    async with open_stores(settings) as stores:
        decider = Decider(settings, stores.locks, stores.decisions, stores.threads)
        await decider.agent(decider.profile_ref(None))
        yield decider


def _ask(decider: Decider, thread: str, key: str | None = None, upto: int = 2) -> Any:
    body: dict[str, Any] = {"messages": MESSAGES[:upto], "thread_id": thread}
    if key is not None:
        body["idempotency_key"] = key
    return decider.decide(parse_request("trace", body))


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every SQL statement this process sends in the block (one per row of an executemany)."""
    sent: list[str] = []
    real_execute, real_many = psycopg.AsyncCursor.execute, psycopg.AsyncCursor.executemany

    def text(query: Any) -> str:
        return " ".join(str(query if isinstance(query, str) else query.as_string(None)).split())

    async def execute(self: Any, query: Any, *args: Any, **kw: Any) -> Any:
        sent.append(text(query))
        return await real_execute(self, query, *args, **kw)

    async def executemany(self: Any, query: Any, params: Any, *args: Any, **kw: Any) -> Any:
        params = list(params)
        sent.extend([text(query)] * len(params))
        return await real_many(self, query, params, *args, **kw)

    psycopg.AsyncCursor.execute = execute  # type: ignore[method-assign]
    psycopg.AsyncCursor.executemany = executemany  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.AsyncCursor.execute = real_execute  # type: ignore[method-assign]
        psycopg.AsyncCursor.executemany = real_many  # type: ignore[method-assign]


def _kinds(sent: list[str]) -> Counter[str]:
    """Statements by what they do: lock, lock wait, key lookup / write, checkpoint read..."""
    kinds: Counter[str] = Counter()
    for s in sent:
        low = s.lower()
        if not low:  # the pool's check of a connection it gives out
            kinds["pool check"] += 1
        elif "pg_try_advisory_lock" in low:
            kinds["lock"] += 1
        elif "pg_advisory_lock(" in low:
            kinds["lock wait"] += 1
        elif "guardagent_idempotency" in low:
            kinds["key " + low.split()[0]] += 1
        elif low.startswith("insert into checkpoint_writes"):
            kinds["pending write"] += 1
        elif low.startswith("select seq, checkpoint_id from guardagent_thread_heads"):
            kinds["head read"] += 1
        elif low.startswith("select thread_id, checkpoint,"):  # the saver's read of one
            kinds["checkpoint read"] += 1
    return kinds


def test_a_keyed_decision_takes_the_threads_lock_only_and_adds_its_row(
    pg_url: str, tmp_path: Path
) -> None:
    async def run() -> tuple[Counter[str], Counter[str], list[Answer]]:
        async with replica(pg_url, tmp_path) as decider:
            await _ask(decider, "t-cost")
            await _ask(decider, "t-cost-keyed", key="warm")
            await asyncio.sleep(0.2)  # the pool's resets of the warm-up's connections
            with statements() as plain:
                first = await _ask(decider, "t-cost")
            await asyncio.sleep(0.2)
            with statements() as keyed:
                second = await _ask(decider, "t-cost-keyed", key="k-cost")
            replay = await _ask(decider, "t-cost-keyed", key="k-cost")
            return _kinds(plain), _kinds(keyed), [first, second, replay]

    plain, keyed, answers = asyncio.run(run())
    assert [a.status for a in answers] == [200, 200, 200] and answers[2].replayed
    assert plain["lock"] == keyed["lock"] == 1, (plain, keyed)
    assert keyed["lock wait"] == plain["lock wait"] == 0
    extra = keyed - plain
    assert extra == Counter({"key select": 1, "key insert": 1}), (plain, keyed)
    assert plain["checkpoint read"] == 0, "the replica wrote the head: it knows its state"
    assert plain["pool check"] <= 2, (
        "two connections: the lock's (the head read on it), the write's"
    )
    assert plain["pending write"] == 0, "no LangGraph task writes: the checkpoint only"


def test_a_head_written_by_another_replica_is_read_once(pg_url: str, tmp_path: Path) -> None:
    """A replica's remembered state serves only while the head is the one it wrote."""

    async def run() -> tuple[list[Counter[str]], list[Answer]]:
        async with replica(pg_url, tmp_path / "a") as a, replica(pg_url, tmp_path / "b") as b:
            answers, reads = [], []
            for who in (a, a, b, a, a, b, b):
                with statements() as sent:
                    answers.append(await _ask(who, "t-two-readers", upto=2 + len(answers)))
                reads.append(_kinds(sent))
            return reads, answers

    reads, answers = asyncio.run(run())
    assert [r["checkpoint read"] for r in reads] == [0, 0, 1, 1, 0, 1, 0]
    assert [a.status for a in answers] == [200] * 7


def test_requests_on_one_thread_take_turns_inside_the_replica(pg_url: str, tmp_path: Path) -> None:
    """12 at once on one thread: one line of 12, and the database's lock taken, not waited on."""
    n = 12

    async def run() -> tuple[list[Answer], Counter[str], dict[str, Any]]:
        async with replica(pg_url, tmp_path, pool_size=3) as decider:
            await _ask(decider, "t-warm")
            await asyncio.sleep(0.2)
            with statements() as sent:
                answers = await asyncio.gather(
                    *(_ask(decider, "t-hot", key=f"hot-{i}") for i in range(n))
                )
            history = await decider.threads.history("t-hot")
            return list(answers), _kinds(sent), history

    answers, kinds, history = asyncio.run(run())
    assert [a.status for a in answers] == [200] * n and all(a.body["allowed"] for a in answers)
    assert history["linear"] and history["seq"] == n and len(history["decisions"]) == n
    assert kinds["lock wait"] == 0, kinds
    assert kinds["lock"] < n, f"each request took the database's lock itself: {kinds}"
    assert kinds["head read"] == kinds["lock"], "a handed-on lock comes with the head it left"
    assert kinds["key insert"] == n


def test_two_replicas_on_one_hot_thread_keep_one_line_and_decide_each_key_once(
    pg_url: str, tmp_path: Path
) -> None:
    """Both replicas at once, each request sent to both (a retry on the other replica)."""
    keys = [f"two-{i}" for i in range(10)]

    async def run() -> tuple[list[Answer], list[Answer], dict[str, Any]]:
        async with replica(pg_url, tmp_path / "a") as a, replica(pg_url, tmp_path / "b") as b:
            first = asyncio.gather(
                *(_ask(a, "t-two", key=k, upto=2 + i % 3) for i, k in enumerate(keys))
            )
            again = asyncio.gather(
                *(_ask(b, "t-two", key=k, upto=2 + i % 3) for i, k in enumerate(keys))
            )
            one, two = await asyncio.gather(first, again)
            return list(one), list(two), await a.threads.history("t-two")

    one, two, history = asyncio.run(run())
    assert [x.status for x in one + two] == [200] * (2 * len(keys))
    for x, y in zip(one, two, strict=True):
        assert x.body == y.body, "a key has one decision, whichever replica answered"
        assert x.replayed != y.replayed, "decided once, replayed once"
    assert history["linear"] and history["seq"] == len(keys) == len(history["decisions"])


@pytest.mark.parametrize("backend", ["postgres", "memory"])
def test_one_key_sent_at_once_on_two_threads_is_decided_once(
    backend: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """Without a lock of its own, a key still names one decision: the other thread gets 409
    and nothing is appended to it (its key's row is refused in its transaction)."""
    url = request.getfixturevalue("pg_url") if backend == "postgres" else None

    async def run() -> tuple[list[Answer], list[dict[str, Any]]]:
        settings = ServiceSettings(
            guard=GuardContext(profile="assistant-trace", memory_dir=str(tmp_path)),
            database_url=url,
            pool_size=4,
        )
        async with open_stores(settings) as stores:
            decider = Decider(settings, stores.locks, stores.decisions, stores.threads)
            answers = []
            for n in range(6):
                threads = [f"t-{backend}-{n}-{side}" for side in "ab"]
                answers += await asyncio.gather(
                    *(_ask(decider, t, key=f"same-{backend}-{n}") for t in threads)
                )
            histories = [
                await decider.threads.history(f"t-{backend}-{n}-{side}")
                for n in range(6)
                for side in "ab"
            ]
            return list(answers), histories

    answers, histories = asyncio.run(run())
    for n in range(6):
        pair, lines = answers[2 * n : 2 * n + 2], histories[2 * n : 2 * n + 2]
        assert sorted(a.status for a in pair) == [200, 409], [a.body for a in pair]
        decided = [a.status == 200 for a in pair]
        assert [len(h["decisions"]) for h in lines] == [int(d) for d in decided]
        assert all(h["linear"] for h in lines)


async def _end_lock_sessions(url: str, thread: str) -> int:
    """Terminate the backends holding `thread`'s advisory lock (a lost lock); how many."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND "
            "granted AND objid::text::bigint = (hashtext(%s)::bigint & 4294967295)",
            (f"thread:{thread}",),
        )
        return len(await cur.fetchall())


def test_a_lock_lost_while_handed_on_cannot_fork_the_thread(pg_url: str, tmp_path: Path) -> None:
    """A hands its lock on with the head it wrote; the lock's session dies and B writes: A's
    next run, started from the handed-on head, is refused and decided again on B's."""
    thread = "t-baton"

    async def run() -> tuple[list[Answer], Answer, dict[str, Any], int, int]:
        async with replica(pg_url, tmp_path / "a") as a, replica(pg_url, tmp_path / "b") as b:
            await _ask(a, thread)
            second, go = asyncio.Event(), asyncio.Event()
            real_run, runs = a._run, []

            async def held_run(*args: Any) -> Any:
                runs.append(1)
                if len(runs) == 2:  # the handed-on run, its head already taken
                    second.set()
                    await go.wait()
                return await real_run(*args)

            a._run = held_run  # type: ignore[method-assign]
            mine = [
                asyncio.create_task(_ask(a, thread, upto=3)),
                asyncio.create_task(_ask(a, thread, upto=4)),
            ]
            await asyncio.wait_for(second.wait(), 30)
            lost = await _end_lock_sessions(pg_url, thread)
            other = await _ask(b, thread, upto=5)  # the thread is free: B writes it
            go.set()
            answers = [await asyncio.wait_for(t, 60) for t in mine]
            return answers, other, await b.threads.history(thread), lost, len(runs)

    answers, other, history, lost, runs = asyncio.run(run())
    assert lost == 1 and other.status == 200
    assert history["linear"] is True, "one line: the run on the handed-on head was refused"
    assert [a.status for a in answers] == [200, 200] and runs == 3, "decided again, once"
    assert history["seq"] == 4 and len(history["decisions"]) == 4
