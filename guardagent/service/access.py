"""Who may do what on the service: bearer tokens, each scoped to some threads and some routes.

A thread holds conversation text (its decisions quote it), so one token that reads and decides
on every thread lets any host of any tenant read every other tenant's conversations. The
deployment (never a request) may therefore list scoped tokens in a JSON file named by
`GUARDAGENT_SERVICE_TOKENS_FILE`::

    {"tokens": [
      {"name": "acme-agents", "sha256": "<hex SHA-256 of the token>", "threads": "acme/",
       "scopes": ["decide"]},
      {"name": "acme-audit", "sha256": "<...>", "threads": "acme/", "scopes": ["read"]}
    ]}

- ``threads``: the thread-id prefix the token may use (a tenant's threads: ``"acme/"``); ``""``
  is every thread. A non-empty prefix must end in a character that is not a letter or a digit,
  so ``"acme"`` cannot also cover ``"acmecorp/..."``.
- ``scopes``: ``"decide"`` (the decision routes, with or without a thread) and/or ``"read"``
  (``GET /v1/threads/{id}``).
- ``sha256``: the file holds digests, not tokens, so reading it gives no one a token.

A token's idempotency keys live in its prefix's own namespace (:meth:`Grant.key`): a key
another tenant used is a new key here, so a 409 or a replay cannot tell one tenant what
another sent. A thread outside the prefix is refused (403) from its id alone, before any store
is read: the answer is the same whether the thread exists or not. `GUARDAGENT_SERVICE_TOKEN`
stays what it was: one token for every thread and route (its keys unnamespaced). Tokens are
compared as SHA-256 digests in constant time, against every grant (no early exit).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCOPES = frozenset({"decide", "read"})
_FIELDS = frozenset({"name", "sha256", "threads", "scopes"})


class TokensFileError(ValueError):
    """A tokens file that cannot be read or does not say exactly what the module's note says."""


@dataclass(frozen=True)
class Grant:
    """What one token may do: its routes (`scopes`) on the threads under `threads`.

    Attributes:
        name: The deployment's name for the token (logs and errors; never the token).
        digest: SHA-256 of the token.
        threads: The thread-id prefix it may use ("" is every thread).
        scopes: ``"decide"`` and/or ``"read"``.
        namespaced: Whether its idempotency keys get a namespace of their own (every
            grant of the tokens file; not the single `GUARDAGENT_SERVICE_TOKEN`).
    """

    name: str
    digest: bytes
    threads: str = ""
    scopes: frozenset[str] = SCOPES
    namespaced: bool = True

    def may(self, scope: str, thread_id: str | None) -> bool:
        """Whether the token may use `scope` on `thread_id` (None: a request without a thread)."""
        if scope not in self.scopes:
            return False
        return thread_id is None or thread_id.startswith(self.threads)

    def key(self, idempotency_key: str | None) -> str | None:
        """The key as stored: in this grant's namespace, so tenants' keys never meet.

        The prefix's length leads, so two prefixes never make one stored key (even when one
        prefix is the start of the other).
        """
        if idempotency_key is None or not self.namespaced:
            return idempotency_key
        return f"{len(self.threads)}:{self.threads}{idempotency_key}"


ANYONE = Grant("anyone", b"", namespaced=False)
"""The grant of every caller when the deployment set no token (loopback or a private net)."""


def token_digest(token: str) -> bytes:
    """SHA-256 of a token as the tokens file keeps it."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def read_grants(path: str) -> tuple[Grant, ...]:
    """The grants of a tokens file (see the module's note).

    Raises:
        TokensFileError: a file that cannot be read or does not say exactly that, naming what.
    """
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TokensFileError(f"cannot read the tokens file {path!r}: {exc}") from None
    if (
        not isinstance(data, dict)
        or set(data) != {"tokens"}
        or not isinstance(data["tokens"], list)
        or not data["tokens"]
    ):
        raise TokensFileError(
            f'{path}: must be a JSON object {{"tokens": [...]}} with at least one token'
        )
    grants = [_grant(entry, n, path) for n, entry in enumerate(data["tokens"])]
    digests = [g.digest for g in grants]
    if len(set(digests)) < len(digests):
        raise TokensFileError(f"{path}: one token (sha256) is listed twice")
    return tuple(grants)


def _grant(entry: Any, n: int, path: str) -> Grant:
    where = f"{path}: token {n}"
    if (
        not isinstance(entry, dict)
        or set(entry) - _FIELDS
        or not {"name", "sha256", "scopes"} <= set(entry)
    ):
        raise TokensFileError(f"{where}: an object of name, sha256, scopes and threads (optional)")
    name, digest, threads, scopes = (
        entry["name"],
        entry["sha256"],
        entry.get("threads", ""),
        entry["scopes"],
    )
    if not isinstance(name, str) or not name:
        raise TokensFileError(f"{where}: name must be a non-empty string")
    if not isinstance(digest, str) or len(digest) != 64 or not _hex(digest):
        raise TokensFileError(
            f"{where} ({name}): sha256 must be 64 hex digits (the token's SHA-256)"
        )
    if not isinstance(threads, str) or threads and (threads[-1].isalnum() or "\x00" in threads):
        raise TokensFileError(
            f'{where} ({name}): threads must be "" (every thread) or a '
            "thread-id prefix ending in a separator such as '/' (so 'acme' "
            "cannot cover 'acmecorp')"
        )
    if (
        not isinstance(scopes, list)
        or not scopes
        or not all(isinstance(s, str) and s in SCOPES for s in scopes)
    ):
        raise TokensFileError(
            f"{where} ({name}): scopes must list one or both of {', '.join(sorted(SCOPES))}"
        )
    return Grant(name, bytes.fromhex(digest), threads, frozenset(scopes))


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


class Access:
    """The grants a replica accepts: the single service token and the tokens file's.

    Args:
        token: `GUARDAGENT_SERVICE_TOKEN` (every thread, every route), or None.
        grants: The tokens file's grants.
    """

    def __init__(self, token: str | None, grants: tuple[Grant, ...] = ()) -> None:
        self.grants = grants
        if token is not None:
            self.grants = (
                Grant("GUARDAGENT_SERVICE_TOKEN", token_digest(token), namespaced=False),
                *grants,
            )
        self.open = not self.grants

    def grant(self, authorization: str) -> Grant | None:
        """The grant of an ``Authorization`` header's bearer token; None: no such token.

        Every grant's digest is compared, in constant time, whatever matched before.
        """
        if self.open:
            return ANYONE
        scheme, _, given = authorization.partition(" ")
        digest = token_digest(given.strip())
        found = None
        for grant in self.grants:
            if hmac.compare_digest(digest, grant.digest) and found is None:
                found = grant
        return found if scheme.lower() == "bearer" and given.strip() else None
