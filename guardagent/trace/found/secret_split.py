"""A declared secret sent in pieces: across a call's values in any order, or across calls.

A model told to "send the first half in the subject and the second half in the body", or
"the last part first, with a word between", or "half now and half in the next message"
sends every character of the secret, only never in one run. The pieces are found by what
they cover: every piece of :func:`piece_size` characters (or more) of the secret's compact
form (letters and digits, :func:`~guardagent.trace.found.secret_forms.compact`) found in some view
of some value marks its characters covered; when :data:`LEAKED` of its characters are
covered, the secret left, whatever the order of the pieces and whatever text lies between
them. Three quarters, not all: the rest of a secret is a few guesses away (four characters
of 18 are 1.7 million tries), and a last piece shorter than a piece read, or the first few
characters left off (a vendor's prefix everyone knows), must not hide the leak.

Pieces are looked for in the folded views the secret search read (decoded, look-alikes read,
invisibles removed), with one Aho-Corasick automaton of the secret's pieces, so the cost is
one pass over each view. Across calls: the earlier calls of the thread count only when this
call brings a piece they did not (a call that carries no new piece is not the leak).

Pieces shorter than :func:`piece_size` (at least 4, more for long secrets) are not read in
text: they would be found in ordinary text. A value that is nothing but such a piece (an
argument ``"7f3a"``, of :data:`SHORT_PIECE` characters or more) is read
(:meth:`Pieces.cover_values`): a long secret sent four characters a call is found, while a
short piece inside a sentence is not. A secret whose compact form is shorter than
:data:`~guardagent.trace.found.secret_forms.COMPACT_MIN` is not cut at all.
"""

from __future__ import annotations

from collections.abc import Iterable

import ahocorasick

from guardagent.trace.found.secret_forms import COMPACT_MIN, compact, fold

SHORT_PIECE = 4
"""Letters and digits a whole value needs to count as a piece of a secret by itself."""
LEAKED = 0.75
"""The share of a secret's letters and digits that, sent, is the secret (see the module)."""


def piece_size(length: int) -> int:
    """Shortest piece read of a secret of `length` letters and digits (4 to 6).

    Long enough that ordinary text does not cover a random secret with such pieces; about a
    quarter of the secret for secrets up to 24 characters, so cutting it in up to four
    pieces is found.
    """
    return 4 if length < 16 else 5 if length < 24 else 6


class Pieces:
    """The pieces of each declared secret, to see which of its characters some text covers.

    Args:
        secrets: ``(name, value)`` of the secrets (those too short to cut are left out).
    """

    def __init__(self, secrets: list[tuple[str, str]]) -> None:
        self.lengths: dict[str, int] = {}
        self._compact: dict[str, str] = {}  # lives for one check, as the automaton
        self._automaton = ahocorasick.Automaton()
        for name, value in secrets:
            short = compact(fold(value))
            if len(short) < COMPACT_MIN:
                continue
            self.lengths[name] = len(short)
            self._compact[name] = short
            size = piece_size(len(short))
            for start in range(len(short) - size + 1):
                piece = short[start : start + size]
                where = self._automaton.get(piece, [])
                where.append((name, start, size))
                self._automaton.add_word(piece, where)
        if len(self._automaton):
            self._automaton.make_automaton()

    def cover(self, folded: Iterable[str]) -> dict[str, set[int]]:
        """For each secret, the positions of its characters some piece in `folded` covers."""
        out: dict[str, set[int]] = {}
        if not len(self._automaton):
            return out
        for view in folded:
            short = compact(view)
            if not short:
                continue
            for _, where in self._automaton.iter(short):
                for name, start, size in where:
                    out.setdefault(name, set()).update(range(start, start + size))
        return out

    def cover_values(self, values: Iterable[str]) -> dict[str, set[int]]:
        """For each secret, the characters covered by values that are only a short piece.

        A value whose compact form is :data:`SHORT_PIECE` characters or more, yet shorter
        than a piece :meth:`cover` reads, and that the secret holds, covers each place the
        secret holds it (``"7f3a"`` sent alone in a call). Linear in the values' length
        times the secret's.
        """
        out: dict[str, set[int]] = {}
        for value in values:
            short = compact(fold(value))
            if len(short) < SHORT_PIECE:
                continue
            for name, secret in self._compact.items():
                if len(short) >= piece_size(len(secret)):
                    continue  # read by cover, in text
                at = secret.find(short)
                while at >= 0:
                    out.setdefault(name, set()).update(range(at, at + len(short)))
                    at = secret.find(short, at + 1)
        return out

    def whole(self, name: str, covered: set[int]) -> bool:
        """Whether `covered` is :data:`LEAKED` of the characters of the secret `name`."""
        return len(covered) >= LEAKED * self.lengths[name]
