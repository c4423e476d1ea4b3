"""Reference pages generated from the code, so the docs cannot drift from it.

Used two ways: as a MkDocs hook (`hooks:` in mkdocs.yml), which expands each
``<!-- generated: NAME -->`` marker of a page when the site is built, and by the tests, which
expand the same markers to run the generated examples and to check the tables. Generated:

- ``settings``: every `GUARDAGENT_*` variable `GuardContext.from_env` reads (`ENV_NAMES`),
  described by the `GuardContext` docstring, with its default;
- ``service-settings``: the service's own variables (`ServiceSettings`);
- ``predicates``: every trace predicate (`PREDICATES`), its signature and docstring, and one
  runnable example from `docs/predicate_examples.py`.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from predicate_examples import EXAMPLES, SETUP, example_source  # noqa: E402

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)

DEFAULT_TEXT = {"max_trace_bytes": "8 MiB", "max_request_bytes": "trace limit + 1 MiB",
                "memory_dir": "user data dir", "profile": "`eicu-ac`", "model": "`offline`",
                "k": "the profile's", "today": "the host's clock",
                "database_url": "none (one in-process replica)",
                "service_token": "none (no check)"}
"""Defaults whose value in code reads worse than their meaning."""


def attribute_docs(cls: type) -> dict[str, str]:
    """The `Attributes:` section of a Google-style class docstring, one line per attribute."""
    doc = inspect.getdoc(cls) or ""
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    found: dict[str, str] = {}
    name = ""
    for line in section.splitlines():
        head = re.match(r"^    ([a-z_]+): (.*)$", line)
        if head:
            name = head.group(1)
            found[name] = head.group(2)
        elif name and line.startswith("        "):
            found[name] += " " + line.strip()
        elif line.strip():
            break
    return found


def _default(field: dataclasses.Field[Any]) -> str:
    if field.name in DEFAULT_TEXT:
        return DEFAULT_TEXT[field.name]
    if field.default is not dataclasses.MISSING:
        return "none" if field.default is None else f"`{field.default}`"
    return "none"


def _rows(cls: type, names: dict[str, str]) -> list[str]:
    docs = attribute_docs(cls)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    rows = []
    for field_name, env in names.items():
        text = docs.get(field_name, "").replace("|", "\\|")
        rows.append(f"| `{env}` | {text} | {_default(by_name[field_name])} |")
    return rows


def settings_markdown() -> str:
    """The table of the guard's settings, one row per variable of `ENV_NAMES`."""
    from guardagent.context import ENV_NAMES, ENV_PREFIX, GuardContext

    names = {env[len(ENV_PREFIX):].lower(): env for env in ENV_NAMES}
    head = ["| variable | setting | default |", "|---|---|---|"]
    return "\n".join(head + _rows(GuardContext, names)) + "\n"


def service_settings_markdown() -> str:
    """The table of the service's own settings (`ServiceSettings`, beside the guard's)."""
    from guardagent.context import ENV_PREFIX
    from guardagent.service.settings import ServiceSettings

    # derived fields (init=False: read from another setting) have no variable of their own
    names = {f.name: ENV_PREFIX + f.name.upper() for f in dataclasses.fields(ServiceSettings)
             if f.name != "guard" and f.init}  # fmt: skip
    head = ["| variable | setting | default |", "|---|---|---|"]
    chroma = (f"| `{ENV_PREFIX}CHROMA_URL` | Chroma server for memory (the guard's "
              "`GUARDAGENT_MEMORY_URL`) | none (embedded) |")  # fmt: skip
    return "\n".join(head + _rows(ServiceSettings, names) + [chroma]) + "\n"


def predicates_markdown() -> str:
    """One section per trace predicate: signature, docstring and a runnable example."""
    from guardagent.trace import PREDICATES

    out = ["Every example below runs as written (the tests execute this page). They share",
           "these labels and helpers:", "", "```python", SETUP.rstrip(), "```", ""]
    groups: dict[str, list[str]] = {}
    for name, func in PREDICATES.items():
        groups.setdefault(func.__module__.rsplit(".", 1)[-1], []).append(name)
    for module, names in groups.items():
        out += [f"## `{module}`", ""]
        for name in names:
            func = PREDICATES[name]
            params = list(inspect.signature(func).parameters.values())[1:]
            signature = ", ".join(str(p).split(":")[0] + (f"={p.default!r}" if p.default
                                  is not inspect.Parameter.empty else "") for p in params)
            doc = inspect.getdoc(func) or ""
            example = EXAMPLES[name]
            out += [f"### `{name}({signature})`", "", doc, "",
                    f"Example: `{example['expression']}` gives `{example['expect']}`"
                    + (f". {example['note']}" if "note" in example else "."), "",
                    "```python", example_source(name).rstrip(), "```", ""]
    return "\n".join(out)


GENERATORS = {"settings": settings_markdown, "service-settings": service_settings_markdown,
              "predicates": predicates_markdown}  # fmt: skip


def expand(markdown: str) -> str:
    """The page with each ``<!-- generated: NAME -->`` marker replaced by its content.

    Raises:
        KeyError: a marker naming no generator (a typo must fail the build, not vanish).
    """
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: expand the generated parts of every page at build time."""
    return expand(markdown)
