"""Readable and JSON renderings of check reports and event verdicts."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from guardagent.policy.check import CheckReport
from guardagent.policy.results import PolicyVerdict

_MARK = {"error": "error", "warning": "warning", "info": "info"}


def check_json(report: CheckReport) -> dict[str, Any]:
    """The check report as JSON-able data (`policy check --json`)."""
    return {
        "path": report.path,
        "name": report.name,
        "version": report.version,
        "ok": report.ok,
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "stats": report.stats,
        "findings": [asdict(f) for f in report.findings],
    }


def check_text(report: CheckReport, *, show_info: bool = False) -> str:
    """The check report for people: one line per finding (with its position), then a summary.

    Info findings (e.g. rules attached to no action) are counted, and listed with
    `show_info`.
    """
    title = f"{report.name}@{report.version}" if report.name else report.path
    lines = [f"policy {title} ({report.path})"]
    stats = report.stats
    if stats:
        lines.append(
            f"  {stats['predicates']} predicates ({stats['actions']} actions, action tree depth "
            f"{stats['action_tree_depth']}), {stats['rules']} rules ({stats['hard_rules']} hard); "
            f"checked in {stats['seconds']} s"
        )
    infos = 0
    for finding in report.findings:
        if finding.severity == "info" and not show_info:
            infos += 1
            continue
        where = f"{finding.location}: " if finding.location else ""
        lines.append(f"{where}{_MARK[finding.severity]}: {finding.message} [{finding.code}]")
    verdict = "OK" if report.ok else "FAILED"
    extra = f", {infos} info (--verbose to list)" if infos else ""
    lines.append(
        f"{verdict}: {len(report.errors)} error(s), {len(report.warnings)} warning(s){extra}"
    )
    return "\n".join(lines)


def verdict_text(verdict: PolicyVerdict) -> str:
    """An event's verdict for people: decision, each applicable rule, probability, remedies."""
    lines = [f"{'ALLOW' if verdict.allowed else 'DENY'} under {verdict.policy}: {verdict.reason}"]
    lines.append(f"  actions: {', '.join(verdict.matched_actions) or 'none'}")
    for rule in verdict.applicable():
        values = ", ".join(f"{k}={str(v).lower()}" for k, v in rule.deciding.items())
        line = f"  [{rule.status}] {rule.id}{'' if rule.hard else ' (soft)'}: {rule.logic}"
        if values:
            line += f"   <- {values}"
        lines.append(line)
        if rule.open:
            lines.append(f"      open: {', '.join(rule.open)}")
        if rule.remediation:
            lines.append(f"      remediation: {rule.remediation}")
    safety = verdict.safety_probability
    if safety is not None:
        bound = f" +/- {safety.error_bound}" if safety.method == "sampled" else ""
        lines.append(
            f"  safety probability: {safety.execute:.4f}{bound} if executed, "
            f"{safety.not_execute:.4f} if not (threshold {safety.threshold}, {safety.method})"
        )
    if verdict.remediation is not None:
        lines.append(f"  {verdict.remediation.summary()}")
    return "\n".join(lines)


def verdict_json(verdict: PolicyVerdict) -> str:
    """The verdict as indented JSON."""
    return json.dumps(verdict.model_dump(mode="json"), indent=2)
