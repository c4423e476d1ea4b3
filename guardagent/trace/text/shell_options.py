"""Command-line options as a program reads them: bundled short options and those that write.

:mod:`guardagent.trace.text.shell_writes` reads what a shell command writes. A program reads
its options with ``getopt``: short options bundle (``curl -sSLo FILE`` is ``-s -S -L -o
FILE``; ``sed -Ei`` is ``-E -i``), and an option that takes a value takes the rest of its
bundle or the next word (``-oFILE``, ``-o FILE``). Reading the words one by one misses the
writing option inside a bundle, so :func:`options` reads them as ``getopt`` does.

:data:`WRITING` lists, for each command the guard otherwise takes as a reader, the options
that write a file (``curl -D`` dumps headers, ``wget -o`` logs, ``less -o`` copies its
input, ``tree -o``), and :data:`RUNNING` those that run a program or read a configuration
that may say to write (``sort --compress-program``, ``rg --pre``, ``curl -K``): such a
command may write any file. Linear in the words.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    """How one command reads its options.

    Attributes:
        short_values: Short option letters that take a value (the rest of the bundle or the
            next word); a letter not listed takes none.
        long_values: Long options that take a value (``--output FILE``, ``--output=FILE``).
        optional: Short letters whose value is optional and only attached (``sed -i.bak``).
        abbreviated: Whether it reads a long option from any unambiguous prefix of its name
            (GNU ``getopt_long``: ``sort --out=FILE`` is ``--output=FILE``).
    """

    short_values: str = ""
    long_values: frozenset[str] = frozenset()
    optional: str = ""
    abbreviated: bool = True


SPECS: dict[str, Spec] = {
    "curl": Spec(
        "oDcKeEHdXuAbTwxyYzCrmQFUh",
        frozenset(
            {
                "--output",
                "--dump-header",
                "--cookie-jar",
                "--trace",
                "--trace-ascii",
                "--stderr",
                "--libcurl",
                "--etag-save",
                "--hsts",
                "--alt-svc",
                "--config",
                "--output-dir",
                "--header",
                "--data",
                "--request",
                "--user",
                "--user-agent",
                "--cookie",
                "--form",
                "--referer",
                "--upload-file",
                "--write-out",
                "--proxy",
                "--max-time",
            }
        ),
        abbreviated=False,
    ),
    "wget": Spec(
        "OoaPeiUtTwQ",
        frozenset(
            {
                "--output-document",
                "--output-file",
                "--append-output",
                "--save-cookies",
                "--directory-prefix",
                "--execute",
                "--config",
                "--input-file",
                "--load-cookies",
                "--user-agent",
                "--tries",
                "--timeout",
                "--header",
                "--post-data",
            }
        ),
    ),
    "sort": Spec(
        "okStT",
        frozenset(
            {
                "--output",
                "--compress-program",
                "--key",
                "--field-separator",
                "--temporary-directory",
            }
        ),
    ),
    "sed": Spec("efl", frozenset({"--expression", "--file", "--line-length"}), optional="i"),
    "less": Spec(
        "oObhjkpPtTxyz",
        frozenset({"--log-file", "--LOG-FILE", "--pattern", "--tag", "--lesskey-file"}),
    ),
    "tree": Spec("oLIPH", frozenset({"--filelimit", "--charset", "--timefmt"}), abbreviated=False),
    "rg": Spec(
        "eEfgjmMrtTABC",
        frozenset({"--pre", "--pre-glob", "--regexp", "--file", "--glob", "--type", "--replace"}),
        abbreviated=False,
    ),
    "uniq": Spec("fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars"})),
    "cp": Spec("tS", frozenset({"--target-directory", "--suffix"})),
    "scp": Spec("cFiJloPS", frozenset()),
    "rsync": Spec("efBT", frozenset({"--rsh", "--filter", "--exclude", "--include"})),
}
"""Options that take a value, for the commands read here (an unlisted one takes none)."""

WRITING: dict[str, frozenset[str]] = {
    "curl": frozenset(
        {
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--libcurl",
            "--etag-save",
            "--hsts",
            "--alt-svc",
        }
    ),
    "wget": frozenset(
        {
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "--save-cookies",
        }
    ),
    "sort": frozenset({"-o", "--output"}),
    "less": frozenset({"-o", "-O", "--log-file", "--LOG-FILE"}),
    "tree": frozenset({"-o"}),
    "sed": frozenset({"--in-place"}),  # its files: read by shell_writes
}
"""Options whose value is a file the command writes."""

RUNNING: dict[str, frozenset[str]] = {
    "curl": frozenset({"-K", "--config", "--output-dir"}),
    "wget": frozenset({"-e", "--execute", "--config", "-P", "--directory-prefix"}),
    "sort": frozenset({"--compress-program"}),
    "rg": frozenset({"--pre", "--pre-glob"}),
    "less": frozenset({"--lesskey-file"}),
}
"""Options that run a program, or read a file that may say what to write: any file."""


def options(name: str, words: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """``([(option, value)], [operands])`` of `words` as ``getopt`` reads them for `name`.

    A long option is ``--name`` or ``--name=value`` (the value of a listed one may be the
    next word); a bundle of short options is read letter by letter, a letter that takes a
    value taking the rest of the bundle or the next word. ``--`` ends the options; a
    command without a :data:`SPECS` entry has no option that takes a value.
    """
    spec = SPECS.get(name, Spec())
    found: list[tuple[str, str | None]] = []
    operands: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            operands.extend(words[i:])
            break
        if word.startswith("--"):
            option, eq, value = word.partition("=")
            option = _long_name(name, spec, option)
            if not eq and option in spec.long_values and i < len(words):
                value, i = words[i], i + 1
            found.append((option, value if (eq or option in spec.long_values) else None))
            continue
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        for at in range(1, len(word)):
            letter = word[at]
            rest = word[at + 1 :]
            if letter in spec.optional:
                found.append(("-" + letter, rest or None))
                break
            if letter in spec.short_values:
                if not rest and i < len(words):
                    rest, i = words[i], i + 1
                found.append(("-" + letter, rest))
                break
            found.append(("-" + letter, None))
    return found, operands


def _long_name(name: str, spec: Spec, option: str) -> str:
    """The long option `option` abbreviates, for a command that reads abbreviations.

    A prefix of an option that writes or runs a program is read as that option (the
    reading that may write); else the one listed option it begins, if only one.
    """
    known = spec.long_values | WRITING.get(name, frozenset()) | RUNNING.get(name, frozenset())
    if option in known or not spec.abbreviated or len(option) < 3:
        return option
    matches = sorted(o for o in known if o.startswith(option))
    risky = [o for o in matches if o in WRITING.get(name, ()) or o in RUNNING.get(name, ())]
    return risky[0] if risky else matches[0] if len(matches) == 1 else option


def written_files(name: str, found: list[tuple[str, str | None]]) -> tuple[list[str], str | None]:
    """``(files its options write, why it may write any file)`` for command `name`."""
    running = [o for o, _ in found if o in RUNNING.get(name, ())]
    if running:
        return [], f"`{name} {running[0]}` runs a program or reads what to write"
    writing = WRITING.get(name, frozenset())
    return [v for o, v in found if o in writing and v], None
