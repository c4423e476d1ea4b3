r"""Which files a patch writes: the headers of unified, git and ``apply_patch`` patches.

``apply_patch("*** Update File: invoice-0425.txt\n+IBAN ...")`` (the patch format of
OpenAI's coding agents) or ``git_apply(diff="--- a/invoice-0425.txt\n+++ b/...")`` writes
the file its headers name, though no argument is that name: the name is inside the patch.
:func:`patched_files` reads a patch's file headers line by line, as ``patch`` and ``git
apply`` find them:

- ``apply_patch``: ``*** Add File:``, ``*** Update File:``, ``*** Delete File:``,
  ``*** Move to:``;
- unified and context diffs: ``--- name`` and ``+++ name`` (a tab and a date after the
  name dropped, ``/dev/null`` is no file); git's ``diff --git a/x b/y``, ``rename to``,
  ``copy to``.

Every header name counts, the old side too (a rename writes both places). The caller takes
the names with their ``a/``/``b/`` prefixes and by their last segment (:func:`~guardagent.
trace.resources.names`). Linear: one pass over the lines of a text that holds a header.
"""

from __future__ import annotations

_PREFIXES = (
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
    "--- ",
    "+++ ",
    "rename to ",
    "copy to ",
    "rename from ",
    "copy from ",
)
_MARKS = ("\n+++ ", "*** Update File:", "*** Add File:", "*** Delete File:", "diff --git ")
"""What a text holds when it is a patch (a cheap test before reading its lines)."""


def patched_files(text: str) -> list[str]:
    """The file names a patch's headers give (empty: `text` is no patch)."""
    if "\n" not in text or not any(mark in text for mark in _MARKS):
        return []
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("diff --git "):
            out.extend(part for part in line[len("diff --git ") :].split(" ") if part)
            continue
        prefix = next((p for p in _PREFIXES if line.startswith(p)), None)
        if prefix is None:
            continue
        name = line[len(prefix) :].split("\t", 1)[0].strip()
        if prefix in ("--- ", "+++ ") and (name.startswith(("-", "+")) or not name):
            continue  # a removed or added line that starts so, not a header
        if name and name != "/dev/null":
            out.append(name)
    return out
