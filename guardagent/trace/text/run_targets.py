"""Which runs of a call's tokens are worth forming: those that may be a sensitive identifier.

:func:`guardagent.trace.sources.encoded.encoded_tokens` looks, in every decoded view of a call's
values, for the *runs* of adjacent tokens (``739-214-XQ`` is the run ``739214xq``) that a
sensitive result holds as one identifier-like token
(:func:`~guardagent.trace.text.normal.secret_like`),
as written, reversed or in ROT13. Forming every run of every view (up to ``MAX_JOINED`` a
token) and only then intersecting them with the result's tokens was most of a decision's
secret-flow time: a base64 or base85 reading of an ordinary sentence is many tokens, none
of which begins an identifier.

A run is built by appending tokens, and every run that *is* one of the targets has each of
its shorter runs as a prefix of that target. So :meth:`RunTargets.found` extends a run only
while it is a prefix of a target, and keeps the runs that are targets: exactly the runs of
the full enumeration that are targets, the others never formed. The targets are the
identifier-like tokens as written, reversed and in ROT13 (a view's runs read backwards or
in ROT13 are the runs of the view reversed or in ROT13), so the caller's look-up of each run
"as written, reversed or in ROT13" finds the same tokens from these runs alone.

Cost: one set look-up a token (most tokens begin no identifier), at most ``max_joined`` a
token otherwise; building the targets is linear in their length, once per set of
identifier-like tokens (a thread's changes only when a sensitive result brings a new one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_ROT13 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


def rot13(text: str) -> str:
    """What codecs' "rot13" does, as one table look-up a byte.

    On UTF-8: every byte of a non-ASCII character is 0x80 or above, which the table keeps
    (``str.translate`` with a mapping looks each character up in a dict).
    """
    return text.encode("utf-8", "surrogatepass").translate(_ROT13).decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class RunTargets:
    """Identifier-like tokens as written, reversed and in ROT13, with all their prefixes.

    Attributes:
        targets: The tokens in the three spellings.
        prefixes: Every non-empty prefix of a target up to the longest joined run (a
            longer target is found only as a token alone, which needs no prefix).
    """

    targets: frozenset[str]
    prefixes: frozenset[str]

    def found(self, toks: Sequence[str], max_joined: int, max_chars: int) -> set[str]:
        """The runs of `toks` that are targets.

        The runs are those :func:`guardagent.trace.sources.encoded._runs` forms: each token alone
        (whatever its length), and joined with up to ``max_joined - 1`` that follow it
        while the run is at most `max_chars` long.
        """
        out: set[str] = set()
        if not self.targets:
            return out
        prefixes, targets, n = self.prefixes, self.targets, len(toks)
        for i in range(n):
            run = toks[i]
            if run in targets:
                out.add(run)
            if run not in prefixes:
                continue  # no joined run from here is a target (the usual case)
            for j in range(i + 1, min(i + max_joined, n)):
                run += toks[j]
                if len(run) > max_chars or run not in prefixes:
                    break
                if run in targets:
                    out.add(run)
        return out


def run_targets(identifiers: frozenset[str], max_chars: int) -> RunTargets:
    """The targets of a set of identifier-like tokens, prefixes up to `max_chars`.

    At most `max_chars` prefixes a target: linear in the targets, whatever their length.
    Kept by the caller (a message's reading keeps its own: ``encoded.Read.targets``).
    """
    targets = frozenset(
        spelled for token in identifiers for spelled in (token, token[::-1], rot13(token))
    )
    prefixes = frozenset(t[:k] for t in targets for k in range(1, min(len(t), max_chars) + 1))
    return RunTargets(targets, prefixes)


def merged(parts: Sequence[RunTargets]) -> RunTargets:
    """The targets of several sets together (the union of each one's)."""
    if len(parts) == 1:
        return parts[0]
    return RunTargets(
        frozenset().union(*(p.targets for p in parts)),
        frozenset().union(*(p.prefixes for p in parts)),
    )
