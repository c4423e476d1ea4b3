"""Guard profiles: a guard request, the target agent's specification, a toolbox and demos.

A profile is a YAML file (or a directory holding `profile.yaml`). Built-in profiles live next
to this module and are addressed by name.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator

from guardagent.eval.textio import json_error
from guardagent.tools.registry import DEFAULT_TOOLBOX, Toolbox

if TYPE_CHECKING:  # the memory store (and Chroma) load only when memory records are built
    from guardagent.memory_store.store import Demonstration

BUILTIN_DIR = Path(__file__).parent


class ProfileError(ValueError):
    """A profile that cannot be found or does not validate."""


class DemoSpec(BaseModel):
    """A hand-written demonstration as stored in a profile's JSONL file."""

    id: str
    agent_input: str
    agent_output: str
    label: int = Field(ge=0, le=1)
    details: dict[str, list[str]] | list[str] = Field(default_factory=list)
    plan: str
    code: str


class Profile(BaseModel):
    """A loaded guard profile.

    `policy_model` names a policy model (a YAML file relative to the profile, or a shipped
    policy's name such as ``tool-calls``): programs then assign its predicates with
    ``assign(...)`` and the graph's `verify` node decides every rule with z3
    (:mod:`guardagent.policy`). `safety_threshold` overrides the policy model's threshold.
    """

    name: str
    description: str = ""
    guard_request: str
    agent_specification: str
    toolbox: list[str]
    k: int = Field(default=1, ge=1)
    demonstrations: list[DemoSpec]
    root: Path
    policy_model: str | None = None
    safety_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    _tools: Toolbox | None = PrivateAttr(default=None)

    @field_validator("toolbox")
    @classmethod
    def _known_functions(cls, names: list[str]) -> list[str]:
        DEFAULT_TOOLBOX.subset(names)  # raises KeyError naming the unknown ones
        return names

    @property
    def fingerprint(self) -> str:
        """Key of this profile's programs in memory.

        It covers the guard request, the toolbox, the labelled demonstrations a program is
        verified against and the policy model's file (when the profile names one): changing
        any of them starts a new key, so programs verified under the old ones are never
        picked up again.
        """
        demos = [
            [d.agent_input, d.agent_output, d.label, d.details] for d in self.demonstrations
        ]
        from guardagent.memory_store.store import request_fingerprint

        parts: list[Any] = [self.guard_request, sorted(self.toolbox), demos]
        if self.policy_model:  # programs verified under one policy model are not reused
            from guardagent.policy.model import policy_digest, resolve_policy

            parts.append(policy_digest(resolve_policy(self.root, self.policy_model)))
        key = json.dumps(parts, sort_keys=True)
        return request_fingerprint(key)

    def tools(self) -> Toolbox:
        """The trusted functions programs under this profile may call (built once)."""
        if self._tools is None:
            self._tools = DEFAULT_TOOLBOX.subset(self.toolbox)
        return self._tools

    def policy(self, name: str) -> Any:
        """The literal a profile program assigns to `name` (its rule or permission table).

        Benchmarks and tests read the policy from the program itself, so there is one copy.

        Raises:
            KeyError: when no demonstration program assigns `name` a literal.
        """
        for code in dict.fromkeys(d.code for d in self.demonstrations):
            for node in ast.parse(code).body:
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in node.targets
                ):
                    return ast.literal_eval(node.value)
        raise KeyError(f"profile {self.name!r}: no program assigns a literal to {name!r}")

    def demos(self, *, verified: bool) -> list[Demonstration]:
        """The demonstrations as memory records, marked with the verification result."""
        from guardagent.memory_store.store import Demonstration, demonstration_id

        out = []
        for d in self.demonstrations:
            demo = Demonstration(
                id="",
                agent_input=d.agent_input,
                agent_output=d.agent_output,
                plan=d.plan,
                code=d.code,
                label=d.label,
                details=d.details,
                request_fingerprint=self.fingerprint,
                verified=verified,
            )
            demo["id"] = demonstration_id(demo)
            out.append(demo)
        return out


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped with the package."""
    return sorted(p.parent.name for p in BUILTIN_DIR.glob("*/profile.yaml"))


def _resolve(name_or_path: str) -> Path:
    builtin = BUILTIN_DIR / name_or_path / "profile.yaml"
    if "/" not in name_or_path and builtin.is_file():
        return builtin
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        path = path / "profile.yaml"
    if path.is_file():
        return path
    raise ProfileError(
        f"unknown profile {name_or_path!r}: not a built-in ({', '.join(builtin_profiles())}) "
        "and no profile YAML at that path"
    )


def _read_demos(root: Path, spec: Any) -> list[dict[str, Any]]:
    """Demonstrations inline (a list) or in a JSONL file; `program` names a file of code."""
    if isinstance(spec, str):
        source = root / spec
        spec = []
        for number, line in enumerate(_read(source).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                spec.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ProfileError(
                    f"{source} line {number}: not valid JSON ({json_error(exc)})"
                ) from None
    if spec is not None and not isinstance(spec, list):
        raise ProfileError("`demonstrations` must be a list or the name of a JSONL file")
    demos = []
    for number, raw in enumerate(spec or [], start=1):
        if not isinstance(raw, dict):
            raise ProfileError(f"demonstration {number}: must be a mapping (JSON object)")
        raw = dict(raw)
        if "program" in raw:
            program = root / str(raw.pop("program"))
            if not program.is_file():
                raise ProfileError(f"{_demo_name(number, raw)}: program file {program} "
                                   "does not exist")
            raw["code"] = _read(program)
        demos.append(raw)
    return demos


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not valid UTF-8 (byte {exc.start + 1}); save it as UTF-8"
                           ) from None


def _demo_name(number: int, raw: Any) -> str:
    ident = raw.get("id") if isinstance(raw, dict) else None
    return f"demonstration {number}" + (f" (id {ident!r})" if ident else "")


def _field(loc: Sequence[str | int]) -> str:
    return ".".join(str(part) for part in loc)


def explain_validation(exc: ValidationError, raw: dict[str, Any]) -> list[str]:
    """Each pydantic error as one line in the profile's terms (field, demonstration id).

    A profile author should read "demonstration 2 (id 'nurse-cost'): no `code`", not a dump
    of pydantic's model and input values.
    """
    demos = raw.get("demonstrations") or []
    lines = []
    for error in exc.errors():
        loc, kind = error["loc"], error["type"]
        if len(loc) >= 2 and loc[0] == "demonstrations" and isinstance(loc[1], int):
            where = _demo_name(loc[1] + 1, demos[loc[1]] if loc[1] < len(demos) else None)
            name = _field(loc[2:])
            if kind == "missing" and name == "code":
                lines.append(f"{where}: no `code`: give its guard program as `code` (the "
                             "program's text) or `program` (a file next to profile.yaml)")
            elif kind == "missing":
                lines.append(f"{where}: missing `{name}`")
            else:
                lines.append(f"{where}: `{name}`: {error['msg']}")
        elif kind == "missing":
            lines.append(f"missing `{_field(loc)}`")
        else:
            lines.append(f"`{_field(loc) or 'profile'}`: {error['msg']}")
    return lines


def load_profile(name_or_path: str) -> Profile:
    """Load a built-in profile by name, or a profile YAML / directory by path.

    Loaded profiles are cached by the state of their files (name, size and modification time
    of every file in the profile's folder), not by path: a profile edited on disk is loaded
    afresh on its next use.

    Raises:
        ProfileError: unknown name, unreadable file, or invalid content, with the reason in
            the profile's terms (the field, the demonstration's id).
    """
    path = _resolve(name_or_path)
    return _load(path, _stamp(path.parent))


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """What a cached profile must match: each file of its folder with its size and mtime."""
    entries = []
    for entry in sorted(folder.iterdir()):
        if entry.is_file():
            stat = entry.stat()
            entries.append((entry.name, stat.st_size, stat.st_mtime_ns))
    return tuple(entries)


@lru_cache(maxsize=32)
def _load(path: Path, stamp: tuple[tuple[str, int, int], ...]) -> Profile:
    """Read and validate one profile file (cached per `stamp`)."""
    raw: dict[str, Any] = {}
    try:
        loaded = yaml.safe_load(_read(path)) or {}
        if not isinstance(loaded, dict):
            raise ProfileError(f"{path}: a profile must be a YAML mapping")
        raw = loaded
        raw["demonstrations"] = _read_demos(path.parent, raw.get("demonstrations"))
        raw.setdefault("name", path.parent.name)
        return Profile(root=path.parent, **raw)
    except ProfileError as exc:
        text = str(exc)  # messages about a file of the profile already name it
        named = text.startswith(str(path.parent))
        raise ProfileError(text if named else f"{path}: {text}") from None
    except KeyError as exc:  # an unknown toolbox name; str(KeyError) would add quotes
        raise ProfileError(f"{path}: {exc.args[0] if exc.args else exc}") from None
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        shown = "\n".join(f"  - {line}" for line in explain_validation(exc, raw))
        raise ProfileError(f"{path}: invalid profile:\n{shown}") from None
