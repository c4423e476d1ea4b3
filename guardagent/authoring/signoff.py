"""Sign-off of derived policy files: the tag over each file, its version, and rollback.

Rules a model derived from a guard request are cached in the memory directory
(``derived/<profile>-<fingerprint>.yaml``) and reviewed there with ``guardagent policy
review``. Whoever can write that folder but holds no key could otherwise weaken a rule and
mark it approved (which also hides it from the default listing of pending rules), forge a
tag, or put back an older signed file after a stricter sign-off. So:

- Beside each file, ``.sig`` holds ``fingerprint version tag``: an HMAC from the memory's
  key over the request fingerprint, the sign-off version and the file's text. A file
  whose tag does not check is never used, and review refuses it before anything else:
  review only ever signs what it read under a tag that checked (or, with
  ``--accept-unsigned``, what it showed in full and stripped of the approvals nobody
  signed), so a forged or stale tag is never re-signed.
- The version is a sign-off counter: every signing takes a higher one (at least the clock
  in milliseconds, so a counter whose record was lost still moves on). ``.signoff`` holds
  the latest version signed for the file, tagged with the key and the file's name; a file
  signed with a lower version is an older one put back, a rollback, and refused. The
  versions a process has read are kept too, so within a process even a restored record
  cannot roll a file back.

What a folder writer can still do, without the key: delete the files (the rules are derived
again, or the guard denies) or put back an older file *with* its sign-off record of then;
only a process that saw the newer version notices that (a record kept outside the folder
would be needed, and the memory has no such place).
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path

from guardagent.environment import MEMORY_KEY, value
from guardagent.memory_store.integrity import KEY_FILE, MemoryKeyError, memory_key

DERIVED_DIR = "derived"
SIGNATURE = ".sig"
RECORD = ".signoff"
_TAG_V1 = "guardagent-derived-policy-v1"  # files signed before versions: version 0
_TAG = "guardagent-derived-policy-v2"
_RECORD_TAG = "guardagent-derived-signoff-v1"
_MAX_DIGITS = 18


class SignoffError(ValueError):
    """A derived policy file whose tag or sign-off version cannot be believed (says why)."""


@dataclass(frozen=True)
class Signed:
    """A derived policy file whose tag checked, and the version it was signed off at."""

    fingerprint: str
    version: int
    text: str


def sign(key: bytes, fingerprint: str, text: str, version: int = 0) -> str:
    """The tag over a derived policy file, the request it is for and its sign-off version."""
    parts = (
        [_TAG_V1, fingerprint, text] if version == 0 else [_TAG, fingerprint, str(version), text]
    )
    return hmac.new(key, "\x00".join(parts).encode("utf-8"), sha256).hexdigest()


def _record_tag(key: bytes, name: str, fingerprint: str, version: int) -> str:
    message = "\x00".join([_RECORD_TAG, name, fingerprint, str(version)]).encode("utf-8")
    return hmac.new(key, message, sha256).hexdigest()


def memory_dir_key(
    path: Path, key: str | bytes | None = None, *, create: bool = False
) -> bytes | None:
    """The key of the memory holding derived file `path` (None: no key here).

    A key file is made only when writing (`create`), never to read.
    """
    memory_dir = path.parent.parent
    configured = key or value(MEMORY_KEY)
    if not create and not configured and not (memory_dir / KEY_FILE).is_file():
        return None
    try:
        return memory_key(key, memory_dir, None)
    except MemoryKeyError:
        return None


def is_derived_file(path: Path) -> bool:
    """Whether `path` is a derived policy in a memory directory (its sign-off is checked).

    Judged by place, not by the presence of a tag: removing the tag must not turn a
    derived file into a plain policy file that review edits without asking.
    """
    if path.parent.name != DERIVED_DIR:
        return False
    beside = (path.with_suffix(SIGNATURE), path.with_suffix(RECORD), path.parent.parent / KEY_FILE)
    return any(p.exists() for p in beside)


def _fields(path: Path, suffix: str, what: str) -> list[str]:
    target = path.with_suffix(suffix)
    try:
        return target.read_text(encoding="ascii").split()
    except FileNotFoundError:
        raise SignoffError(f"{path}: it has no {what} ({target.name} is missing)") from None
    except (OSError, UnicodeDecodeError):
        raise SignoffError(f"{path}: its {what} ({target.name}) cannot be read") from None


def _version(text: str, path: Path, what: str) -> int:
    if not (text.isdecimal() and text.isascii() and len(text) <= _MAX_DIGITS):
        raise SignoffError(f"{path}: its {what} names no sign-off version")
    return int(text)


def claimed_fingerprint(path: Path) -> str | None:
    """The request fingerprint the file's tag names, if it is the file's own (else None).

    Unverified: only for adopting a file whose tag does not check (``--accept-unsigned``);
    the file's name carries the fingerprint's first 16 characters, which must agree.
    """
    try:
        fields = path.with_suffix(SIGNATURE).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    fp = fields[0] if fields else ""
    ok = len(fp) >= 16 and fp.isalnum() and fp.isascii() and path.stem.endswith(f"-{fp[:16]}")
    return fp if ok else None


_SEEN: dict[str, int] = {}
_SEEN_LOCK = threading.Lock()


def forget_signoffs() -> None:
    """Forget the versions this process has read (tests: a fresh process)."""
    with _SEEN_LOCK:
        _SEEN.clear()


def _seen(path: Path) -> int:
    with _SEEN_LOCK:
        return _SEEN.get(str(path.resolve()), 0)


def _saw(path: Path, version: int) -> None:
    where = str(path.resolve())
    with _SEEN_LOCK:
        _SEEN[where] = max(_SEEN.get(where, 0), version)


def latest_version(path: Path, key: bytes, fingerprint: str) -> int:
    """The latest sign-off version recorded for `path` (its record must check).

    Raises:
        SignoffError: no record, one whose tag does not check, or one for another request.
    """
    fields = _fields(path, RECORD, "sign-off record")
    if len(fields) != 3:
        raise SignoffError(f"{path}: its sign-off record cannot be read")
    fp, version_text, tag = fields
    version = _version(version_text, path, "sign-off record")
    if not hmac.compare_digest(_record_tag(key, path.name, fp, version), tag):
        raise SignoffError(
            f"{path}: its sign-off record's tag does not check with the memory's key"
        )
    if fp != fingerprint:
        raise SignoffError(f"{path}: its sign-off record is for another request")
    return version


def read_signed(path: Path, key: bytes, fingerprint: str | None = None) -> Signed:
    """The file's text, after its tag and sign-off version checked.

    Args:
        path: The derived policy file.
        key: The memory's key.
        fingerprint: The request the file must be for (None: the one its tag names).

    Raises:
        SignoffError: no tag, a tag that does not check (edited or signed without the key),
            one for another request, or a version below the latest signed (a rollback).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SignoffError(f"{path}: it cannot be read ({type(exc).__name__})") from None
    fields = _fields(path, SIGNATURE, "tag")
    if len(fields) not in (2, 3):
        raise SignoffError(f"{path}: its tag cannot be read")
    fp, tag = fields[0], fields[-1]
    version = _version(fields[1], path, "tag") if len(fields) == 3 else 0
    if fingerprint is not None and fp != fingerprint:
        raise SignoffError(f"{path}: its tag is for another request")
    if not hmac.compare_digest(sign(key, fp, text, version), tag):
        raise SignoffError(
            f"{path}: its tag does not check with the memory's key (edited, "
            "or signed, without the key)"
        )
    floor = max(latest_version(path, key, fp), _seen(path))
    if version < floor:
        raise SignoffError(
            f"{path}: rollback: it was signed off at version {version}, "
            f"but version {floor} was signed since (an older file put back?)"
        )
    _saw(path, version)
    return Signed(fp, version, text)


def next_version(path: Path, key: bytes, fingerprint: str, after: int = 0) -> int:
    """A sign-off version above every one signed for `path` (and the clock's milliseconds)."""
    try:
        latest = latest_version(path, key, fingerprint)
    except SignoffError:
        latest = 0
    return max(max(after, latest, _seen(path)) + 1, time.time_ns() // 1_000_000)


def write_signed(path: Path, key: bytes, fingerprint: str, text: str, version: int) -> None:
    """Write the file, its tag, then its sign-off record (each replaced atomically).

    A crash part-way leaves a tag that does not check or a record below the file's
    version: the first is refused, the second accepted (the file is the newer one).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, text)
    _write(
        path.with_suffix(SIGNATURE),
        f"{fingerprint} {version} {sign(key, fingerprint, text, version)}\n",
    )
    _write(
        path.with_suffix(RECORD),
        f"{fingerprint} {version} {_record_tag(key, path.name, fingerprint, version)}\n",
    )
    _saw(path, version)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


@dataclass(frozen=True)
class ReviewSignoff:
    """What `policy review` may sign a derived file with.

    Attributes:
        key: The memory's key.
        fingerprint: The request the file is for (None: unknown, so it cannot be signed).
        version: The version its tag checked at (0 when it did not check).
        problem: Why its tag or version is not believed (None: it checked).
        text: The text whose tag checked ("" when it did not): review reads this, not the
            file again, so what it signs is what was checked.
    """

    key: bytes
    fingerprint: str | None
    version: int
    problem: str | None = None
    text: str = ""


def review_signoff(path: Path, *, accept_unsigned: bool) -> ReviewSignoff:
    """Check a derived file's sign-off before review reads, lists or signs anything.

    Raises:
        SignoffError: no key here, or a tag or version that does not check (unless
            `accept_unsigned`: then the problem is returned, to be shown loudly).
    """
    key = memory_dir_key(path)
    if key is None:
        raise SignoffError(
            f"{path}: the memory's key is not available here (set "
            f"{MEMORY_KEY.name}, or run as the memory's owner), so its tag "
            "cannot be checked"
        )
    try:
        signed = read_signed(path, key)
    except SignoffError as exc:
        if not accept_unsigned:
            raise
        return ReviewSignoff(key, claimed_fingerprint(path), 0, str(exc))
    return ReviewSignoff(key, signed.fingerprint, signed.version, text=signed.text)
