"""`guardagent memory info|clear`: where the memory lives, what it holds, and how to empty it.

The memory persists between runs (and between clones of the project) in
`~/.local/share/guardagent/memory`, or `$GUARDAGENT_MEMORY_DIR`, or a Chroma server. A user
who does not know that cannot tell why a fresh checkout behaves like an old one; these
commands say where it is and what is in it, and clear one profile's records on request.
Only click is imported at start-up; Chroma loads when a command runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from guardagent.environment import MEMORY_KEY, value
from guardagent.exit_status import InputError, epilog
from guardagent.readers.textio import dumps_safe


@dataclass(frozen=True)
class CollectionInfo:
    """One profile's records in the memory."""

    name: str
    records: int
    verified_programs: int
    current: int
    """Records of the profile as it is now (same guard request, toolbox, demonstrations)."""


def _location(memory_dir: str | None, memory_url: str | None) -> tuple[str, Path | None]:
    """A printable location and, for a local memory, its directory."""
    if memory_url:
        return memory_url, None
    from guardagent.memory_store.store import default_memory_dir

    path = Path(memory_dir).expanduser() if memory_dir else default_memory_dir()
    return str(path), path


def _client(memory_dir: str | None, memory_url: str | None) -> Any | None:
    """A Chroma client, or None when a local memory was never created (none is made here)."""
    _, path = _location(memory_dir, memory_url)
    if path is not None and not (path / "chroma.sqlite3").is_file():
        return None
    from guardagent.memory_store.store import _client as shared_client

    return shared_client(str(path) if path else None, memory_url)


def _key(memory_dir: str | None, memory_url: str | None) -> bytes | None:
    """The deployment's memory key: configured, else an existing local key file (none is made)."""
    from guardagent.memory_store.integrity import KEY_FILE, memory_key

    _, path = _location(memory_dir, memory_url)
    if value(MEMORY_KEY) or (path is not None and (path / KEY_FILE).is_file()):
        return memory_key(None, path, memory_url)
    return None


def _profile_prefix(profile: str) -> tuple[str, str | None]:
    """(collection-name prefix, current request fingerprint) of a profile name or path."""
    from guardagent.memory_store.store import collection_name
    from guardagent.profiles.loader import ProfileError, load_profile

    try:
        loaded = load_profile(profile)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    # a collection is named after the profile and the embedding: "guardagent-<name>.<embedding>"
    return collection_name(loaded.name, "") + ".", loaded.fingerprint


def collections(
    client: Any,
    prefix: str = "guardagent-",
    fingerprint: str | None = None,
    key: bytes | None = None,
) -> list[CollectionInfo]:
    """The guardagent collections whose name starts with `prefix`, counted.

    `verified_programs` counts the distinct programs tagged with `key` (none without one).
    """
    from guardagent.memory_store.integrity import PROGRAM_TAG, checks, program_tag

    def signed(meta: Any) -> bool:
        if key is None or not meta or not isinstance(meta.get("code"), str):
            return False
        expected = program_tag(
            key, code=meta["code"], request=str(meta.get("request_fingerprint", ""))
        )
        return checks(expected, meta.get(PROGRAM_TAG))

    out = []
    for listed in client.list_collections():
        name = listed if isinstance(listed, str) else listed.name
        if not name.startswith(prefix):
            continue
        collection = client.get_collection(name)
        # The stored "verified" flag is the writer's claim; count the programs whose tag
        # checks with this deployment's key (each guard still verifies them before use).
        found = collection.get(include=["metadatas"])
        codes = {str(m["code"]) for m in found.get("metadatas") or [] if signed(m)}
        current = (
            len(collection.get(where={"request_fingerprint": fingerprint}, include=[])["ids"])
            if fingerprint
            else 0
        )
        out.append(CollectionInfo(name, int(collection.count()), len(codes), current))
    return out


_memory_dir = click.option(
    "--memory-dir",
    default=None,
    help="Memory directory (default: $GUARDAGENT_MEMORY_DIR, else the user data directory).",
)
_memory_url = click.option("--memory-url", default=None, help="Chroma server URL.")


@click.group(
    name="memory",
    epilog=epilog("memory clear: 1 when it deleted nothing because --yes was not given."),
)
def memory() -> None:
    """Where the guard's memory lives and what it holds.

    Verified programs and demonstrations persist between runs, in
    ~/.local/share/guardagent/memory (or $GUARDAGENT_MEMORY_DIR, --memory-dir, or a Chroma
    server with --memory-url); every checkout of the project shares it.
    """


@memory.command(epilog=epilog())
@click.option("--profile", default=None, help="Only this profile (name or path).")
@_memory_dir
@_memory_url
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(
    profile: str | None, memory_dir: str | None, memory_url: str | None, as_json: bool
) -> None:
    """Say where the memory is and how many records each profile has there."""
    where, _ = _location(memory_dir, memory_url)
    prefix, fingerprint = _profile_prefix(profile) if profile else ("guardagent-", None)
    client = _client(memory_dir, memory_url)
    found = (
        collections(client, prefix, fingerprint, _key(memory_dir, memory_url))
        if client is not None
        else []
    )
    if as_json:
        click.echo(
            dumps_safe(
                {
                    "location": where,
                    "exists": client is not None,
                    "collections": [vars(c) for c in found],
                    "records": sum(c.records for c in found),
                }
            )
        )
        return
    source = "Chroma server" if memory_url else "local directory"
    click.echo(f"memory: {where} ({source})")
    if client is None:
        click.echo("  nothing stored yet: it is created on first use")
        return
    if not found:
        click.echo(f"  no records{f' for profile {profile}' if profile else ''}")
    for c in found:
        line = f"  {c.name}: {c.records} record(s), {c.verified_programs} verified program(s)"
        if fingerprint is not None:
            line += f"; {c.current} of the profile as it is now"
        click.echo(line)


@memory.command(epilog=epilog("1 when it deleted nothing because --yes was not given."))
@click.option("--profile", required=True, help="The profile (name or path) to forget.")
@_memory_dir
@_memory_url
@click.option("--yes", is_flag=True, help="Really delete (without it, only say what would go).")
@click.pass_context
def clear(
    ctx: click.Context, profile: str, memory_dir: str | None, memory_url: str | None, yes: bool
) -> None:
    """Delete a profile's records (demonstrations, remembered programs) from the memory.

    The profile's own demonstrations are stored again, and re-verified, when a guard next
    opens the memory: `eval` and `serve` as they start, `check` only when it needs
    demonstrations or a remembered program (not when the profile's own program decides).
    """
    where, _ = _location(memory_dir, memory_url)
    prefix, _fingerprint = _profile_prefix(profile)
    client = _client(memory_dir, memory_url)
    found = collections(client, prefix) if client is not None else []
    total = sum(c.records for c in found)
    if not found:
        click.echo(f"nothing to clear: no records of profile {profile} in {where}")
        return
    if not yes:
        click.echo(
            f"would delete {total} record(s) of profile {profile} from {where} "
            f"({', '.join(c.name for c in found)}); run again with --yes to delete"
        )
        ctx.exit(1)
    assert client is not None
    for c in found:
        client.delete_collection(c.name)
    click.echo(f"deleted {total} record(s) of profile {profile} from {where}")
