"""Throughput under concurrency with a slow scripted model, and LLM calls with/without reuse.

Part 1: every event goes through plan -> code -> execute (program reuse off) with a scripted
chat model that waits a set latency per call (default 200 ms), at concurrency 1, 8 and 32.
Part 2: over a full benchmark stream, LLM calls per decision with program reuse on vs off, from
a profile written the paper's way: its demonstrations hold no program and no rule table (so the
model derives the request's rules once, which are the oracle its program is verified against,
then writes the program; with reuse on, the first verified program serves every later event).
The scripted model answers every prompt of that path: the derivation (the shipped policy model
as JSON), the plan and the code (the shipped program).
Part 3 (`--model-path`): both shipped benchmarks through that path with `guardagent eval` over
an OpenAI-compatible stub on loopback (langchain-openai), labels compared with the shipped
programs' (offline) and LLM calls per decision.

Run: .venv/bin/python benchmarks/bench_throughput.py [--latency 0.2] [--events 64] [--model-path]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's guardagent, tests

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import guardagent.profiles as profiles_pkg
from guardagent import GuardAgent
from guardagent.eval.benchmarks import load_benchmark
from guardagent.eval.cases import write_cases
from guardagent.nodes import prompts
from tests.derived_answers import answer_text
from tests.openai_stub import OpenAIStub

PROFILE = "mind2web-sc"
BUILTIN = Path(profiles_pkg.__file__).parent
PROFILE_DIR = BUILTIN / PROFILE
PROGRAMS = {"mind2web-sc": "safety_rules.py", "eicu-ac": "access_control.py"}


class SlowScriptedModel(BaseChatModel):
    """Plans and programs from a script, after `latency` seconds (a stand-in for a real LLM)."""

    latency: float = 0.2
    program: str = ""

    @property
    def _llm_type(self) -> str:
        return "slow-scripted"

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        text = reply(str(messages[0].content), self.program, PROFILE)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        time.sleep(self.latency)
        return self._reply(messages)

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        await asyncio.sleep(self.latency)
        return self._reply(messages)


def reply(system: str, program: str, policy: str) -> str:
    """The scripted answer to one prompt of the model path: derivation, code, or plan."""
    if system.startswith("You derive"):
        return answer_text(policy)
    return f"```python\n{program}\n```" if "guardrail code" in system else "1. 2. 3. 4."


def unverified_profile(root: Path, name: str = PROFILE) -> str:
    """A copy of a built-in profile written the paper's way: no program, no table."""
    target = root / "profile"
    shutil.copytree(BUILTIN / name, target)
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
    # Each row fences its events afresh: the same events went through the previous row, and
    # the fence of a text is kept (guardagent.nodes.prompts.fenced), which would time a warm cache.
    prompts._fenced_kept.cache_clear()

    async def run() -> float:
        # Little runs on the loop's default executor now (model calls and sandbox children
        # are awaited on the loop); sized for the concurrency all the same.
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
    guard = GuardAgent(
        profile, model=model, reuse_programs=reuse, memory_dir=str(root / f"mem-{reuse}")
    )
    cases = load_benchmark(PROFILE)
    calls = sum(guard.check(c.agent_input, c.agent_output).llm_calls for c in cases)
    return calls / len(cases)


def model_path(name: str, root: Path) -> dict[str, Any]:
    """`guardagent eval` of a paper-style copy of `name` through the model path, over HTTP."""
    program = (BUILTIN / name / PROGRAMS[name]).read_text()
    cases = root / f"{name}.jsonl"
    write_cases(cases, load_benchmark(name))
    env = {**os.environ, "OPENAI_API_KEY": "x", "NO_PROXY": "127.0.0.1,localhost"}

    def evaluate(profile: str, out: Path, model: list[str]) -> list[dict[str, Any]]:
        cmd = [
            sys.executable,
            "-m",
            "guardagent.cli",
            "eval",
            "--profile",
            profile,
            "--cases",
            str(cases),
            "--out",
            str(out),
            "--memory-dir",
            str(out / "mem"),
            "--quiet",
            *model,
        ]
        subprocess.run(
            cmd,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        lines = (out / "predictions.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    shipped = evaluate(name, root / f"{name}-shipped", [])
    with OpenAIStub(
        responder=lambda body: reply(str(body["messages"][0]["content"]), program, name)
    ) as stub:
        started = time.perf_counter()
        derived = evaluate(
            unverified_profile(root / name, name),
            root / f"{name}-model",
            ["--model", "openai:stub-model", "--base-url", stub.base_url],
        )
        seconds = time.perf_counter() - started
        requests = stub.count
    same = sum(a["predicted"] == b["predicted"] for a, b in zip(shipped, derived, strict=True))
    return {
        "events": len(shipped),
        "same_labels": same,
        "model_requests": requests,
        "llm_calls_per_decision": round(requests / len(shipped), 4),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--events", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--model-path",
        action="store_true",
        help="Also run both shipped benchmarks through the model path.",
    )
    args = parser.parse_args()
    cases = load_benchmark(PROFILE)[: args.events]
    events = [(c.agent_input, c.agent_output) for c in cases]
    with tempfile.TemporaryDirectory() as tmp:
        rates = {n: throughput(events, n, args.latency, f"{tmp}/mem-{n}") for n in args.concurrency}
        reuse_on = llm_calls_per_decision(True, Path(tmp))
        reuse_off = llm_calls_per_decision(False, Path(tmp))
        paths = {n: model_path(n, Path(tmp)) for n in PROGRAMS} if args.model_path else {}
    base = rates[args.concurrency[0]]
    result = {
        "model_latency_s": args.latency,
        "events": len(events),
        "decisions_per_s": {str(n): round(r, 2) for n, r in rates.items()},
        "speedup_vs_first": {str(n): round(r / base, 1) for n, r in rates.items()},
        "llm_calls_per_decision": {
            "reuse_on": round(reuse_on, 4),
            "reuse_off": round(reuse_off, 4),
        },
        "model_path": paths,
    }
    print(json.dumps(result))
    print(
        "throughput "
        + ", ".join(f"c={n}: {r:.1f}/s ({r / base:.1f}x)" for n, r in rates.items())
        + f"; LLM calls per decision over {PROFILE}: reuse on {reuse_on:.4f}, off {reuse_off:.2f}"
    )
    for name, got in paths.items():
        print(
            f"{name} through the model path: {got['same_labels']}/{got['events']} labels as "
            f"the shipped program, {got['llm_calls_per_decision']} LLM calls per decision"
        )


if __name__ == "__main__":
    main()
