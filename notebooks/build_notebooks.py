"""Write the eval notebooks (no outputs) from the cell sources below.

The notebooks are generated rather than hand-edited so that the two benchmark notebooks stay
the same apart from their profile, and so that a diff of this file is a readable diff of the
notebooks. Run `python notebooks/build_notebooks.py` after changing a cell.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent

PARAMETERS = """# Parameters: a small sample by default, so the notebook runs in seconds.
import os
import tempfile

PROFILE = "{profile}"
LIMIT = int(os.environ.get("GUARDAGENT_NB_LIMIT", "40"))
OUT = os.environ.get("GUARDAGENT_NB_OUT") or tempfile.mkdtemp(prefix="guardagent-nb-")"""

IMPORTS = """from pathlib import Path

from IPython.display import Image, Markdown, display

from guardagent import GuardAgent, GuardContext, load_profile
from guardagent.eval.benchmarks import load_benchmark
from guardagent.eval.definitions import CONVENTIONS, markdown_table
from guardagent.eval.metrics import HEADLINE, expected_details, is_wrong
from guardagent.eval.predictions import read_decisions
from guardagent.eval.report import PAPER_BASELINE, PAPER_TABLE_2, clip
from guardagent.eval.runner import run_eval
from guardagent.eval.trace import trace_markdown
from guardagent.graph import graph"""

SAMPLE = """# An evenly spaced sample of the benchmark (the file is grouped, so the first N cases
# would not cover every role or rule).
everything = load_benchmark(PROFILE)
step = max(1, len(everything) // LIMIT)
cases = everything[::step][:LIMIT]
print(f"{len(cases)} of {len(everything)} cases: {sum(c.label for c in cases)} must be denied")"""

RUN = """guard = GuardAgent(PROFILE)  # offline: verified programs only, no LLM
metrics = run_eval(guard, cases, OUT, progress=False)
decisions = read_decisions(OUT)
assert metrics["n"] == len(decisions) == len(cases)
print("wrote", sorted(p.name for p in Path(OUT).iterdir()))"""

HEADLINE_CELL = '''def row(name, values):
    """One Markdown table row of the five headline metrics."""
    return f"| {name} | " + " | ".join(str(values.get(k, "n/a")) for k in HEADLINE) + " |"


table = ["| | " + " | ".join(HEADLINE) + " |", "|---" * (len(HEADLINE) + 1) + "|",
         row(f"this run (n={metrics['n']})", metrics),
         row("paper, GPT-4 GuardAgent (full benchmark)", PAPER_TABLE_2[PROFILE]),
         row("paper, GPT-4 model-only baseline", PAPER_BASELINE[PROFILE])]
display(Markdown("\\n".join(table + ["", *markdown_table(), "", CONVENTIONS])))
ex, per = metrics["executable"], metrics["cost"]["per_decision"]
print("executable before / after debugging:", ex["before_debug"], "/", ex["after_debug"])
print("LLM calls per decision:", per["llm_calls"]["mean"],
      "| latency p50 / p95 (ms):", per["latency_ms"]["p50"], "/", per["latency_ms"]["p95"])
print("fail-closed:", metrics["fail_closed"], "| program source:", metrics["program_source"])'''

PLOTS = """for png in sorted(Path(OUT, "plots").glob("*.png")):
    display(Markdown(f"**{png.stem.replace('_', ' ')}**"))
    display(Image(filename=str(png)))"""

WRONG = """wrong = [(c, d) for c, d in zip(cases, decisions, strict=True) if is_wrong(c, d)]
print(f"{len(wrong)} wrong decision(s) in the sample")
for case, decision in wrong[:3]:
    print(f"\\n{case.id}: expected {case.label} {expected_details(case)}, "
          f"decided {decision.label} {decision.violations}\\n  reason: {decision.reason}")
if wrong:
    print("\\nProgram that decided the first one (clipped):\\n")
    print(clip(wrong[0][1].program, 800))"""

TRACE = """# One event through the graph, node by node, from the graph's own update stream.
case = next(c for c in cases if c.label == 1)
steps = []
for chunk in graph.stream(
    {"agent_input": case.agent_input, "agent_output": case.agent_output},
    context=GuardContext(profile=PROFILE),
    stream_mode="updates",
):
    for node, update in chunk.items():
        steps.append((node, update))
        print(f"{node:>8} wrote {sorted(update)}")
assert [node for node, _ in steps] == ["admit", "retrieve", "execute", "decide"]
display(Markdown(trace_markdown(steps)))"""

FAKE_MODEL = '''from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class FakeChatModel(GenericFakeChatModel):
    """Answers with fixed replies in order and keeps every prompt: a stand-in for an LLM."""

    prompts: list = []

    def _generate(self, messages, *args, **kwargs):
        self.prompts.append(list(messages))
        reply = AIMessage(content=next(self.messages))
        return ChatResult(generations=[ChatGeneration(message=reply)])'''

SCRIPTED_TRACE = """# The model path: the fake "LLM" plans, writes a program that fails when it runs
# (it reads a setting that does not exist), the debugger explains the error, and the second
# program (the profile's own) runs and then verifies on the demonstrations (remember).
# reuse_programs=False makes the graph ask the model, not memory.
good = load_profile(PROFILE).demonstrations[0].code
broken = 'limits = {}\\nthreshold = limits["threshold"]\\n' + good
fake = FakeChatModel(messages=iter([
    "1. Read the user's facts from the input. 2. Read the action from the output. "
    "3. Check the guard request's requirements. 4. Allow or deny with the violations.",
    f"```python\\n{broken}\\n```",
    "`limits` is empty, so `limits['threshold']` raises KeyError: drop those two lines.",
    f"```python\\n{good}\\n```",
]), prompts=[])
context = GuardContext(profile=PROFILE, model=fake, reuse_programs=False)
scripted = [
    (node, update)
    for chunk in graph.stream(
        {"agent_input": case.agent_input, "agent_output": case.agent_output},
        context=context, stream_mode="updates",
    )
    for node, update in chunk.items()
]
nodes = [node for node, _ in scripted]
print(" -> ".join(nodes))
assert nodes == ["admit", "retrieve", "plan", "code", "execute", "debug", "code",
                 "execute", "remember", "decide"]
final = scripted[-1][1]["guard_decision"]
assert final.attempt_errors[0] and final.attempt_errors[-1] is None
assert final.label == steps[-1][1]["guard_decision"].label  # same program, same verdict
display(Markdown(trace_markdown(scripted, limit=300)))"""


def benchmark_notebook(profile: str, title: str) -> nbformat.NotebookNode:
    """Run the offline guard over a sample of one benchmark and walk through two traces."""
    cells = [
        new_markdown_cell(
            f"# {title}: graph-level evaluation\n\n"
            "Runs the GuardAgent graph over a sample of the benchmark (set "
            "`GUARDAGENT_NB_LIMIT`; the full benchmark is `guardagent eval --profile "
            f"{profile} --out DIR`), computes the paper's metrics, shows the plots, and walks "
            "one event through the graph node by node: offline (admit -> retrieve -> "
            "execute -> decide) and with a scripted stand-in model (plan, code, execute, "
            "debug, code, execute, remember, decide)."
        ),
        new_code_cell(PARAMETERS.format(profile=profile)),
        new_code_cell(IMPORTS),
        new_markdown_cell("## Cases"),
        new_code_cell(SAMPLE),
        new_markdown_cell("## Run the graph over the sample"),
        new_code_cell(RUN),
        new_markdown_cell(
            "## Metrics\n\nThe paper's numbers are over the full benchmark; the sample's are "
            "over `LIMIT` cases, so they are indicative only."
        ),
        new_code_cell(HEADLINE_CELL),
        new_markdown_cell("## Plots"),
        new_code_cell(PLOTS),
        new_markdown_cell("## Wrong decisions"),
        new_code_cell(WRONG),
        new_markdown_cell(
            "## One trace, offline\n\nThe profile has a verified program for this guard "
            "request, so no model is needed: admit accepts the event, retrieve finds the "
            "program, execute runs it in the sandbox, decide builds the decision."
        ),
        new_code_cell(TRACE),
        new_markdown_cell(
            "## The same event with a (scripted) model\n\nA real deployment passes "
            '`model="openai:gpt-4o"` or a local server; here a fake chat model with fixed '
            "replies stands in, so the notebook runs offline and every node of the graph shows."
        ),
        new_code_cell(FAKE_MODEL),
        new_code_cell(SCRIPTED_TRACE),
    ]
    return _notebook(cells)


COMPARE_PARAMETERS = """# Parameters. Point RUN_A / RUN_B at two existing output directories (made
# with `guardagent eval ... --out DIR`) to compare those; otherwise two runs are made here.
import os
import tempfile

PROFILE = os.environ.get("GUARDAGENT_NB_PROFILE", "mind2web-sc")
LIMIT = int(os.environ.get("GUARDAGENT_NB_LIMIT", "40"))
RUN_A = os.environ.get("GUARDAGENT_NB_RUN_A")
RUN_B = os.environ.get("GUARDAGENT_NB_RUN_B")
MODEL = os.environ.get("GUARDAGENT_NB_MODEL")  # e.g. openai:gpt-4o for a real baseline run"""

COMPARE_IMPORTS = """import itertools

from IPython.display import Image, Markdown, display
from langchain_core.language_models import GenericFakeChatModel

from guardagent import GuardAgent
from guardagent.eval.baseline import BaselineGuard
from guardagent.eval.benchmarks import load_benchmark
from guardagent.eval.compare import (
    disagreements,
    headline_figure,
    latency_comparison_figure,
    load_run,
    metrics_table,
)
from guardagent.eval.plots import figure_png
from guardagent.eval.runner import run_eval"""

COMPARE_RUNS = """if not (RUN_A and RUN_B):
    everything = load_benchmark(PROFILE)
    cases = everything[:: max(1, len(everything) // LIMIT)][:LIMIT]
    # Under GUARDAGENT_NB_OUT (the tests set it to their own temporary folder) the two runs go
    # there; otherwise into a new temporary folder.
    BASE = os.environ.get("GUARDAGENT_NB_OUT") or tempfile.mkdtemp(prefix="guardagent-compare-")
    RUN_A, RUN_B = os.path.join(BASE, "guardagent"), os.path.join(BASE, "baseline")
    run_eval(GuardAgent(PROFILE), cases, RUN_A, progress=False, plots=False)
    # The baseline asks a model for the decision directly. Without GUARDAGENT_NB_MODEL a
    # stand-in that always answers "allow" takes the model's place: it shows the comparison,
    # it is not a result about any real model.
    stand_in = GenericFakeChatModel(messages=itertools.repeat(
        '{"label": 0, "violations": [], "reason": "stand-in model: always allow"}'))
    run_eval(BaselineGuard(PROFILE, model=MODEL or stand_in), cases, RUN_B,
             progress=False, plots=False)
a = load_run(RUN_A, "guardagent")
b = load_run(RUN_B, "baseline" if not os.environ.get("GUARDAGENT_NB_RUN_B") else None)
print(a.name, a.metrics["n"], "cases |", b.name, b.metrics["n"], "cases")"""

COMPARE_TABLE = """display(Markdown(metrics_table(a, b)))"""

COMPARE_DIFF = """diff = disagreements(a, b)
print(f"{len(diff)} case(s) decided differently")
for row in diff[:10]:
    print(row)
assert all(row["gold"] in (0, 1) for row in diff)"""

COMPARE_PLOTS = """display(Image(data=figure_png(headline_figure([a, b]))))
display(Image(data=figure_png(latency_comparison_figure([a, b]))))"""


def compare_notebook() -> nbformat.NotebookNode:
    """Compare two runs: metrics side by side, disagreements, plots."""
    cells = [
        new_markdown_cell(
            "# Compare two eval runs\n\nMetrics side by side, the cases the runs decide "
            "differently, and their headline metrics and latency as plots. By default: "
            "GuardAgent offline against the model-only baseline (with a stand-in model unless "
            "`GUARDAGENT_NB_MODEL` names a real one)."
        ),
        new_code_cell(COMPARE_PARAMETERS),
        new_code_cell(COMPARE_IMPORTS),
        new_markdown_cell("## The two runs"),
        new_code_cell(COMPARE_RUNS),
        new_markdown_cell("## Metrics"),
        new_code_cell(COMPARE_TABLE),
        new_markdown_cell("## Where they disagree"),
        new_code_cell(COMPARE_DIFF),
        new_markdown_cell("## Plots"),
        new_code_cell(COMPARE_PLOTS),
    ]
    return _notebook(cells)


def _notebook(cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids keep regenerated notebooks diff-free
    return nb


def main() -> None:
    """Write every notebook next to this file."""
    books = {
        "eicu_ac.ipynb": benchmark_notebook("eicu-ac", "EICU-AC (access control)"),
        "mind2web_sc.ipynb": benchmark_notebook("mind2web-sc", "Mind2Web-SC (safety control)"),
        "compare_runs.ipynb": compare_notebook(),
    }
    for name, nb in books.items():
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
