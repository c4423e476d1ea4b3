"""Throughput under concurrency with a slow scripted model, and LLM calls with/without reuse.

Part 1: every event goes through plan -> code -> execute (program reuse off) with a scripted
chat model that waits a set latency per call (default 200 ms), at concurrency 1, 8 and 32.
Part 2: over a full benchmark stream, LLM calls per decision with program reuse on vs off,
starting from a memory whose demonstrations hold no verified program (so the model must write
one; with reuse on, the first verified program serves every later event).

Run: .venv/bin/python benchmarks/bench_throughput.py [--latency 0.2] [--events 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import guardagent.profiles as profiles_pkg
from guardagent import GuardAgent
from guardagent.eval.benchmarks import load_benchmark

PROFILE = "mind2web-sc"
PROFILE_DIR = Path(profiles_pkg.__file__).parent / PROFILE


class SlowScriptedModel(BaseChatModel):
    """Plans and programs from a script, after `latency` seconds (a stand-in for a real LLM)."""

    latency: float = 0.2
    program: str = ""

    @property
    def _llm_type(self) -> str:
        return "slow-scripted"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        system = str(messages[0].content)
        text = f"```python\n{self.program}\n```" if "guardrail code" in system else "1. 2. 3. 4."
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        time.sleep(self.latency)
        return self._reply(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        await asyncio.sleep(self.latency)
        return self._reply(messages)


def unverified_profile(root: Path) -> str:
    """A copy of the profile whose demonstrations' program is wrong: memory cannot decide."""
    target = root / "profile"
    shutil.copytree(PROFILE_DIR, target)
    lines = (target / "demonstrations.jsonl").read_text().splitlines()
    demos = [json.loads(line) for line in lines]
    for d in demos:
        d.pop("program", None)
        d["code"] = "allow('placeholder')"
    (target / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    return str(target)


def throughput(events: list[tuple[str, str]], concurrency: int, latency: float, mem: str) -> float:
    program = (PROFILE_DIR / "safety_rules.py").read_text()
    model = SlowScriptedModel(latency=latency, program=program)
    guard = GuardAgent(PROFILE, model=model, reuse_programs=False, memory_dir=mem)
    guard.warm_up()

    async def run() -> float:
        # Sync nodes run on the loop's default executor; size it for the concurrency.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(concurrency + 4))
        started = time.perf_counter()
        decisions = await guard.acheck_many(events, concurrency=concurrency)
        assert all(d.llm_calls == 2 and d.error is None for d in decisions)
        return len(events) / (time.perf_counter() - started)

    return asyncio.run(run())


def llm_calls_per_decision(reuse: bool, root: Path) -> float:
    program = (PROFILE_DIR / "safety_rules.py").read_text()
    model = SlowScriptedModel(latency=0.0, program=program)
    profile = unverified_profile(root / ("reuse" if reuse else "noreuse"))
    guard = GuardAgent(profile, model=model, reuse_programs=reuse,
                       memory_dir=str(root / f"mem-{reuse}"))
    cases = load_benchmark(PROFILE)
    calls = sum(guard.check(c.agent_input, c.agent_output).llm_calls for c in cases)
    return calls / len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--events", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()
    cases = load_benchmark(PROFILE)[: args.events]
    events = [(c.agent_input, c.agent_output) for c in cases]
    with tempfile.TemporaryDirectory() as tmp:
        rates = {n: throughput(events, n, args.latency, f"{tmp}/mem-{n}") for n in args.concurrency}
        reuse_on = llm_calls_per_decision(True, Path(tmp))
        reuse_off = llm_calls_per_decision(False, Path(tmp))
    base = rates[args.concurrency[0]]
    result = {
        "model_latency_s": args.latency,
        "events": len(events),
        "decisions_per_s": {str(n): round(r, 2) for n, r in rates.items()},
        "speedup_vs_first": {str(n): round(r / base, 1) for n, r in rates.items()},
        "llm_calls_per_decision": {
            "reuse_on": round(reuse_on, 4), "reuse_off": round(reuse_off, 4)
        },
    }
    print(json.dumps(result))
    print("throughput " + ", ".join(
        f"c={n}: {r:.1f}/s ({r / base:.1f}x)" for n, r in rates.items()
    ) + f"; LLM calls per decision over {PROFILE}: reuse on {reuse_on:.4f}, off {reuse_off:.2f}")


if __name__ == "__main__":
    main()
