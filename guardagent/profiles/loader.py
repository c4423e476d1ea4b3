"""Guard profiles: a guard request, the target agent's specification, a toolbox and demos.

A profile is a YAML file (or a directory holding `profile.yaml`). Built-in profiles live next
to this module and are addressed by name.

A profile may name Python modules of its own (`toolbox_modules`): a `.py` file inside the
profile's folder, or an importable dotted module. They are run once per process, before the
profile's `toolbox` names are resolved, so their `@guard_tool` functions can be named there;
the CLI, the API and the served graph all load profiles here, so all three see the same
functions. Running a module is running the deployer's code, which is why only a profile the
deployment names is ever loaded: a run that names a profile by path is refused before this
module reads anything (:func:`guardagent.nodes.runtime.for_run`).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator

from guardagent.readers.textio import json_error
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
    (:mod:`guardagent.policy`). `safety_threshold` overrides the policy model's threshold;
    `approved_only` guards with only the rules a human approved or edited.
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
    approved_only: bool = False
    toolbox_modules: list[str] = Field(default_factory=list)
    _tools: Toolbox | None = PrivateAttr(default=None)
    _module_digests: list[str] = PrivateAttr(default_factory=list)

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
        picked up again. Within :func:`fingerprints_per_run` it is computed once per run (a
        loaded profile is a mutable object its callers share: never for longer).
        """
        kept = _RUN_FINGERPRINTS.get()
        if kept is None:
            return self._fingerprint()
        found = kept.get(id(self))
        if found is None or found[0] is not self:
            found = kept[id(self)] = (self, self._fingerprint())
        return found[1]

    def _fingerprint(self) -> str:
        demos = [[d.agent_input, d.agent_output, d.label, d.details] for d in self.demonstrations]
        from guardagent.memory_store.store import request_fingerprint

        parts: list[Any] = [self.guard_request, sorted(self.toolbox), demos]
        if self.policy_model:  # programs verified under one policy model are not reused
            from guardagent.policy.model import policy_digest, resolve_policy

            parts.append(policy_digest(resolve_policy(self.root, self.policy_model)))
        if self.toolbox_modules:  # nor programs verified against other versions of its tools
            parts.append(self._module_digests or self.toolbox_modules)
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
                raise ProfileError(
                    f"{_demo_name(number, raw)}: program file {program} does not exist"
                )
            raw["code"] = _read(program)
        demos.append(raw)
    return demos


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(
            f"{path}: not valid UTF-8 (byte {exc.start + 1}); save it as UTF-8"
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
                lines.append(
                    f"{where}: no `code`: give its guard program as `code` (the "
                    "program's text) or `program` (a file next to profile.yaml)"
                )
            elif kind == "missing":
                lines.append(f"{where}: missing `{name}`")
            else:
                lines.append(f"{where}: `{name}`: {error['msg']}")
        elif kind == "missing":
            lines.append(f"missing `{_field(loc)}`")
        else:
            lines.append(f"`{_field(loc) or 'profile'}`: {error['msg']}")
    return lines


_RUN_FINGERPRINTS: ContextVar[dict[int, tuple[Profile, str]] | None] = ContextVar(
    "guardagent_run_fingerprints", default=None
)


@contextmanager
def fingerprints_per_run() -> Iterator[None]:
    """Within: each profile's fingerprint is computed once (one guard run).

    A run asks for it from five places (memory search, derivation, verification keys), and
    it hashes the request and every demonstration (~60 us). Kept for the run only, like the
    run's profile (:func:`guardagent.nodes.runtime.profile_of`): a profile or policy file
    edited meanwhile gives a new key from the next run on, as it would have from a node
    that read it after the edit. Each entry holds its profile, so an id is never reused.
    """
    token = _RUN_FINGERPRINTS.set({})
    try:
        yield
    finally:
        _RUN_FINGERPRINTS.reset(token)


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
    """What a cached profile must match: each file of its folder with its size and mtime.

    Read on every run (one `stat` a file: the folder's listing says which are files).
    """
    entries = []
    with os.scandir(folder) as listing:
        for entry in listing:
            if entry.is_file():
                stat = entry.stat()
                entries.append((entry.name, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(entries))


@lru_cache(maxsize=32)
def _load(path: Path, stamp: tuple[tuple[str, int, int], ...]) -> Profile:
    """Read and validate one profile file (cached per `stamp`)."""
    raw: dict[str, Any] = {}
    try:
        loaded = yaml.load(_read(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        if not isinstance(loaded, dict):
            raise ProfileError(f"{path}: a profile must be a YAML mapping")
        raw = loaded
        raw["demonstrations"] = _read_demos(path.parent, raw.get("demonstrations"))
        raw.setdefault("name", path.parent.name)
        digests = load_toolbox_modules(path.parent, raw.get("toolbox_modules"))
        profile = Profile(root=path.parent, **raw)
        profile._module_digests = digests
        return profile
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


# --------------------------------------------------------------------------- toolbox modules

_MODULE_LOCK = threading.RLock()  # a module may load a profile of its own
_FILE_MODULES: dict[str, str] = {}  # sha256 of a file's content -> its module's name
_MODULE_PREFIX = "guardprofile_"  # never "guardagent.": the sandbox zygote serves only those


def load_toolbox_modules(root: Path, spec: Any) -> list[str]:
    """Run the profile's `toolbox_modules` (once per process) and return their digests.

    Each entry is a `.py` file relative to the profile's folder (it must stay inside it) or a
    dotted module importable by this process (an installed package: give the same import
    path to the CLI, the API and the server). A file is run under a name of its own made from
    its content's digest, so an identical file named by two profiles runs once; its
    functions are not "built-ins": the sandbox forks the calling process for them
    (:func:`guardagent.sandbox.zygote.toolbox_refs`).

    Raises:
        ProfileError: a malformed entry, a missing file, or a module that fails to run
            (with the exception it raised).
    """
    if spec is None:
        return []
    if not isinstance(spec, list) or not all(isinstance(e, str) and e for e in spec):
        raise ProfileError(
            "`toolbox_modules` must be a list of module files (`my_tools.py`, "
            "relative to the profile) or dotted module names"
        )
    with _MODULE_LOCK:
        return [_load_module(root, entry) for entry in spec]


def _is_file_entry(entry: str) -> bool:
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def _load_module(root: Path, entry: str) -> str:
    if not _is_file_entry(entry):
        if not all(part.isidentifier() for part in entry.split(".")):
            raise ProfileError(f"toolbox module {entry!r}: not a dotted module name nor a .py file")
        try:
            module = importlib.import_module(entry)
        except ImportError as exc:
            raise ProfileError(
                f"toolbox module {entry!r} cannot be imported ({exc}); install "
                "it, or name a .py file relative to the profile"
            ) from None
        except Exception as exc:  # the deployer's module raised: say what, not a traceback
            raise ProfileError(_failed(entry, exc)) from None
        origin = getattr(module, "__file__", None)
        return _digest(Path(origin).read_bytes()) if origin else entry
    base = root.resolve()
    file = (base / entry).resolve()
    if Path(entry).is_absolute() or not file.is_relative_to(base):
        raise ProfileError(
            f"toolbox module {entry!r}: a module file must be inside the profile's folder ({base})"
        )
    if not file.is_file():
        raise ProfileError(f"toolbox module {entry!r}: no such file {file}")
    source = file.read_bytes()
    digest = _digest(source)
    if digest not in _FILE_MODULES:  # the same content copied into two profiles runs once
        _FILE_MODULES[digest] = _run_file(file, source, digest)
    return digest


def _run_file(file: Path, source: bytes, digest: str) -> str:
    stem = "".join(c if c.isalnum() else "_" for c in file.stem)
    name = f"{_MODULE_PREFIX}{stem}_{digest[:16]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has one
        raise ProfileError(f"toolbox module {file}: cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing look their module up by name
    try:
        exec(compile(source, str(file), "exec"), module.__dict__)  # noqa: S102 (the deployer's)
    except Exception as exc:
        del sys.modules[name]
        raise ProfileError(_failed(str(file), exc)) from None
    return name


def _failed(where: str, exc: Exception) -> str:
    text = f"toolbox module {where} failed to load: {type(exc).__name__}: {exc}"
    if isinstance(exc, ValueError) and "already has a function named" in str(exc):
        text += (
            " (a process registers each toolbox name once: rename the function, or "
            "restart the process to use an edited module)"
        )
    return text


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
