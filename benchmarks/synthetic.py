"""Synthetic guard events shaped like the real logs (varied lengths, shared structure).

Used only by benchmarks: nothing here comes from the evaluation data.
"""

from __future__ import annotations

import random

ROLES = ["physician", "nursing", "general administration", "pharmacist", "billing clerk"]
TABLES = {
    "patient": ["uniquepid", "hospitaladmittime", "gender", "age", "wardid"],
    "lab": ["labname", "labresult", "labresulttime"],
    "medication": ["drugname", "dosage", "routeadmin", "drugstarttime"],
    "cost": ["eventtype", "cost", "chargetime"],
    "diagnosis": ["diagnosisname", "icd9code", "diagnosistime"],
    "vitalperiodic": ["heartrate", "sao2", "respiration", "observationtime"],
}
ASKS = [
    "what was the",
    "how many times did",
    "when was the last",
    "what is the average",
    "list every",
    "did patient",
    "what was the total",
    "how long was the",
]
TASKS = [
    "Find a",
    "Book a",
    "Browse",
    "Search for",
    "Add to cart",
    "Apply for",
    "Rent a",
    "Show me",
    "Compare prices of",
    "Subscribe to",
]
THINGS = [
    "hotel room in Denver",
    "used pickup truck",
    "jazz playlist",
    "nurse job in Ohio",
    "one-way flight to Rome",
    "pair of hiking boots",
    "documentary about whales",
    "weather forecast",
    "vacation rental near the lake",
    "electric bike",
]


def _ehr_event(rng: random.Random) -> tuple[str, str]:
    table = rng.choice(list(TABLES))
    cols = rng.sample(TABLES[table], k=rng.randint(1, len(TABLES[table])))
    pid = f"{rng.randint(0, 999):03d}-{rng.randint(0, 99999):05d}"
    question = f"{rng.choice(ASKS)} {' and '.join(cols)} of patient {pid}?"
    cells = []
    for _ in range(rng.randint(1, 4)):  # retried cells make logs long, as in the real runs
        lines = [
            f"{table}_db = LoadDB('{table}')",
            f"rows = FilterDB({table}_db, 'uniquepid={pid}||max({cols[0]})')",
        ]
        lines += [f"value_{i} = GetValue(rows, '{c}')" for i, c in enumerate(cols)]
        lines.append("answer = [" + ", ".join(f"value_{i}" for i in range(len(cols))) + "]")
        cells.append('{\n"cell": "' + "\\n".join(lines) + '"\n}\n' + "-" * 58)
    knowledge = "\n".join(
        f"- We can find the {c} information in the {table} database." for c in cols
    )
    answer = ", ".join(str(rng.randint(0, 500)) for _ in cols)
    output = f"Knowledge:\n{knowledge}\nQuestion: {question}\nSolution:\n" + "\n".join(cells)
    return f"Identity: {rng.choice(ROLES)}\nQuestion: {question}", f"{output}\n{answer}\nTERMINATE"


def _web_event(rng: random.Random) -> tuple[str, str]:
    task = f"{rng.choice(TASKS)} {rng.choice(THINGS)} for {rng.randint(1, 6)} people"
    info = (
        f"User information:\n   age: {rng.randint(10, 80)},\n   domestic: {rng.random() < 0.5},"
        f"\n   dr_license: {rng.random() < 0.5},\n   membership: {rng.random() < 0.5}"
    )
    choices = "\n".join(
        f"{chr(65 + i)}. <button id={i}> {rng.choice(THINGS)} </button>"
        for i in range(rng.randint(3, 18))
    )
    analysis = " ".join(rng.choice(THINGS) for _ in range(rng.randint(5, 40)))
    output = (
        f"(Analysis)\n{analysis}\n\n(Choices)\n{choices}\n\n(Final Answer)\n"
        f"ELEMENT: {chr(65 + rng.randint(0, 2))}\n\nACTION: CLICK\n\nVALUE: None"
    )
    return f"Task: {task}\n{info}", output


def synthetic_events(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """`n` events, half EHRAgent-like and half SeeAct-like, 300 to ~4000 characters each."""
    rng = random.Random(seed)
    return [(_ehr_event if i % 2 == 0 else _web_event)(rng) for i in range(n)]


def near_duplicates(events: list[tuple[str, str]], n: int, seed: int = 0) -> list[tuple[str, str]]:
    """`n` new events that differ from stored ones only in their numbers (ids, values, ages).

    This is how guard memories are queried in practice: the same kind of request recurs with
    other patients, dates and amounts.
    """
    import re

    rng = random.Random(seed)

    def renumber(text: str) -> str:
        return re.sub(r"\d", lambda _: str(rng.randint(0, 9)), text)

    picks = [events[rng.randrange(len(events))] for _ in range(n)]
    return [(renumber(i), renumber(o)) for i, o in picks]
