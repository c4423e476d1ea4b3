"""Reference pages generated from the code, so the docs cannot drift from it.

Used two ways: as a MkDocs hook (`hooks:` in mkdocs.yml), which expands each
``<!-- generated: NAME -->`` marker of a page when the site is built, and by the tests, which
expand the same markers to run the generated examples and to check the tables. Generated:

- ``settings``: the guard's rows of the settings table (`guardagent.environment`), described
  by the `GuardContext` docstring;
- ``service-settings``: the service's own rows, described by `ServiceSettings`'s docstring;
- ``other-settings``: the rows read where they are used, described by the table itself;
- ``predicates``: every trace predicate (`PREDICATES`), its signature and docstring, and one
  runnable example from `docs/predicate_examples.py`.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from predicate_examples import EXAMPLES, SETUP, example_source  # noqa: E402

from guardagent.environment import Setting  # noqa: E402

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)

DEFAULT_TEXT = {
    "max_trace_bytes": "8 MiB",
    "max_request_bytes": "trace limit + 1 MiB",
    "memory_dir": "user data dir",
    "profile": "`eicu-ac`",
    "model": "`offline`",
    "k": "the profile's",
    "today": "the host's clock",
    "database_url": "none (one in-process replica)",
    "service_token": "none (no check)",
    "GUARDAGENT_CHROMA_URL": "none (embedded)",
    "GUARDAGENT_MEMORY_KEY": "the memory directory's key file",
    "GUARDAGENT_CACHE_DIR": "the user's cache dir",
    "GUARDAGENT_DATA": "`../shared/data`",
    "GUARDAGENT_DEMO_USER_INFO": '`{"verified": false}`',
}
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


def _default(row: Setting[Any]) -> str:
    key = row.field or row.name
    if key in DEFAULT_TEXT:
        return DEFAULT_TEXT[key]
    if isinstance(row.default, bool):
        return "on" if row.default else "off"
    return "none" if row.default is None else f"`{row.default}`"


def _table(rows: tuple[Setting[Any], ...], cls: type | None) -> str:
    """One line per row: variable, meaning, how it is read, default, who may set it."""
    docs = attribute_docs(cls) if cls is not None else {}
    out = ["| variable | setting | value | default | set by |", "|---|---|---|---|---|"]
    for row in rows:
        text = (docs.get(row.field or "") or row.summary).replace("|", "\\|")
        out.append(
            f"| `{row.name}` | {text} | {row.kind.replace('|', '/')} | "
            f"{_default(row)} | {', '.join(row.set_by)} |"
        )
    return "\n".join(out) + "\n"


def settings_markdown() -> str:
    """The table of the guard's settings (`GuardContext.from_env`)."""
    from guardagent.context import GuardContext
    from guardagent.environment import GUARD_SETTINGS

    return _table(GUARD_SETTINGS, GuardContext)


def service_settings_markdown() -> str:
    """The table of the service's own settings (`ServiceSettings`, beside the guard's)."""
    from guardagent.environment import SERVICE_SETTINGS
    from guardagent.service.settings import ServiceSettings

    return _table(SERVICE_SETTINGS, ServiceSettings)


def other_settings_markdown() -> str:
    """The table of the settings read where they are used (sandbox, memory key, eval...)."""
    from guardagent.environment import OTHER_SETTINGS

    return _table(OTHER_SETTINGS, None)


def predicates_markdown() -> str:
    """One section per trace predicate: signature, docstring and a runnable example."""
    from guardagent.trace import PREDICATES

    out = [
        "Every example below runs as written (the tests execute this page). They share",
        "these labels and helpers:",
        "",
        "```python",
        SETUP.rstrip(),
        "```",
        "",
    ]
    groups: dict[str, list[str]] = {}
    for name, func in PREDICATES.items():
        groups.setdefault(func.__module__.rsplit(".", 1)[-1], []).append(name)
    for module, names in groups.items():
        out += [f"## `{module}`", ""]
        for name in names:
            func = PREDICATES[name]
            params = list(inspect.signature(func).parameters.values())[1:]
            signature = ", ".join(
                str(p).split(":")[0]
                + (f"={p.default!r}" if p.default is not inspect.Parameter.empty else "")
                for p in params
            )
            doc = inspect.getdoc(func) or ""
            example = EXAMPLES[name]
            out += [
                f"### `{name}({signature})`",
                "",
                doc,
                "",
                f"Example: `{example['expression']}` gives `{example['expect']}`"
                + (f". {example['note']}" if "note" in example else "."),
                "",
                "```python",
                example_source(name).rstrip(),
                "```",
                "",
            ]
    return "\n".join(out)


GENERATORS = {
    "settings": settings_markdown,
    "service-settings": service_settings_markdown,
    "other-settings": other_settings_markdown,
    "predicates": predicates_markdown,
}


def expand(markdown: str) -> str:
    """The page with each ``<!-- generated: NAME -->`` marker replaced by its content.

    Raises:
        KeyError: a marker naming no generator (a typo must fail the build, not vanish).
    """
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: expand the generated parts of every page at build time."""
    return expand(markdown)
