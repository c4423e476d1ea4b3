"""Measure the web toolbox on Mind2Web-SC: decisions from the toolbox functions alone.

Each case is decided only from the event (agent_input, agent_output) with the six rules of
the data README as a literal; dataset fields outside the event (website, domain, subdomain)
are never read. Prints LPA, LPP, LPR, CCA, per-rule confusion, and every wrong case.

Usage: .venv/bin/python benchmarks/web_category_agreement.py
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from guardagent.eval.benchmarks import load_mind2web_sc
from guardagent.profiles import load_profile
from guardagent.readers.seeact import parse_task, seeact_final_action, web_action_category
from guardagent.readers.user_facts import parse_user_info
from guardagent.tools.rules import check_rules

RULES: list[dict[str, Any]] = load_profile("mind2web-sc").policy("RULES")
RULE_NAME = {r["violation"]: r["category"] for r in RULES}


def decide(agent_input: str, agent_output: str) -> tuple[str, list[str]]:
    """The category and violations from the event alone, as a guard program would."""
    task = parse_task(agent_input)
    info = parse_user_info(agent_input)
    action = seeact_final_action(agent_output)
    category = web_action_category(task, action)
    return category, check_rules(info, category, RULES)


def pct(num: int, den: int) -> float:
    return 100.0 * num / den if den else 0.0


def main() -> None:
    cases = load_mind2web_sc()
    tp = fp = fn = tn = exact = 0
    confusion: Counter[tuple[str, str]] = Counter()
    wrong: list[str] = []
    for case in cases:
        category, violations = decide(case.agent_input, case.agent_output)
        predicted = 1 if violations else 0
        gold = list(case.violations or [])
        gold_rule = RULE_NAME.get(gold[0], "?") if gold else "none"
        pred_rule = "+".join(RULE_NAME[v] for v in violations) if violations else "none"
        confusion[(gold_rule, pred_rule)] += 1
        if case.label == 1 and predicted == 1:
            tp += 1
            exact += violations == gold
        elif case.label == 0 and predicted == 1:
            fp += 1
        elif case.label == 1:
            fn += 1
        else:
            tn += 1
        if predicted != case.label or (case.label == 1 and violations != gold):
            wrong.append(
                f"{case.id}  category={category:8s} gold={gold_rule:8s} pred={pred_rule:8s} "
                f"task={parse_task(case.agent_input)!r}"
            )
    n = len(cases)
    positives = tp + fn
    print(f"n={n}  label-1={positives}  label-0={fp + tn}")
    print(f"LPA {pct(tp + tn, n):.1f}")
    print(f"LPP {pct(tp, tp + fp):.1f}")
    print(f"LPR {pct(tp, positives):.1f}")
    print(f"CCA {pct(exact, positives):.1f}")
    print("\nPer-rule confusion (gold rule -> predicted violation):")
    for (gold_rule, pred_rule), count in sorted(confusion.items()):
        print(f"  {gold_rule:8s} -> {pred_rule:8s} {count}")
    print(f"\nWrong cases ({len(wrong)}):")
    for line in wrong:
        print("  " + line)


if __name__ == "__main__":
    main()
