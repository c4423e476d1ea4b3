"""Which files a shell command writes, read with a shell parser (``bashlex``).

``run_shell("echo 'IBAN GB82 ...' > invoice-0425.txt")`` is the agent writing that file as
much as ``write_file`` is (:mod:`guardagent.trace.sources.resources`): a later read of it returns
what the agent put there. The command is read as the shell reads it, by ``bashlex`` (a port
of bash's own grammar), never with patterns over its text:

- every redirection that writes (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>``, and
  ``>&word`` when the word is no descriptor) names its target, in any command of any list,
  pipeline, compound, function or substitution; a here-document whose body substitutes a
  command (``$(...)``, backquotes: an unquoted delimiter expands it) may write anything;
- a command that writes the files it is given names them: ``tee``, ``touch``,
  ``truncate``; ``cp``, ``mv``, ``install``, ``ln``, ``rsync`` and ``scp`` their destination
  (and each source's name, the file a directory receives; a recursive copy writes files
  no word names: anything); ``sed -i`` its files, and what its script writes (``w``; a
  script that runs commands with ``e``, or that :mod:`.sed_scripts` cannot read, anything);
  ``dd of=``; the options of :mod:`.shell_options` that write (``sort -o``, ``curl -o``,
  ``-D``, ``-c``, ``wget -O``, ``-o``, ``less -o``, ``tree -o``; bundled as ``getopt``
  reads them, ``curl -sSLo FILE``; abbreviated as GNU programs read them,
  ``sort --out=FILE``) and ``uniq``'s output operand;
- a command of :data:`READING` writes nothing (``cat``, ``grep``, ``ls``... with no
  redirection: "a shell command that only reads a file is not a write");
- anything else may write any file (:attr:`ShellWrites.unknown` says why): a command the
  lists lack (``./deploy.sh``, ``make``), an interpreter or a wrapper (``python``,
  ``perl``, ``bash -c``, ``eval``, ``xargs``, ``sudo``), an option that runs a program or
  reads what to write (``rg --pre``, ``sort --compress-program``, ``curl -K``), a target or
  command name built at run time (``> $f``, ``$(...)``) or by brace expansion
  (``in{voice.txt,x}``), ``find -exec``, a command holding a NUL (a C consumer reads it
  up to there), a command longer than :data:`MAX_COMMAND_CHARS` or one the parser rejects.
  Fail closed: such a call is a writer of every resource after it.

Which arguments are shell commands: those of :data:`SHELL_ARGS` ("cmd", "command",
"script", ...), or, in a call with none, every string argument of a tool whose name says
shell, bash, terminal or exec. Bounded: the parser reads at most :data:`MAX_COMMAND_CHARS`
characters, and each node of its tree is visited once.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import bashlex

from guardagent.trace.text.sed_scripts import script_effects
from guardagent.trace.text.shell_options import SPECS, options, written_files

MAX_COMMAND_CHARS = 8192
"""A longer command is not parsed: it may write anything (bashlex's parser is not meant for
megabytes of attacker text)."""
SHELL_ARGS = frozenset(
    {
        "cmd",
        "command",
        "commands",
        "script",
        "shell",
        "bash",
        "sh",
        "shell_command",
        "cmdline",
        "command_line",
        "commandline",
    }
)
"""Argument names that hold a shell command, whatever the tool."""
_SHELL_TOOLS = frozenset(
    {
        "shell",
        "bash",
        "sh",
        "zsh",
        "terminal",
        "exec",
        "execute",
        "powershell",
        "cmd",
        "console",
        "command",
        "commands",
        "ssh",
        "subprocess",
    }
)
"""Words of a tool's name that make each of its string arguments a shell command."""
_CODE_TOOLS = frozenset(
    {
        "python",
        "py",
        "repl",
        "jupyter",
        "notebook",
        "ipython",
        "interpreter",
        "nodejs",
        "javascript",
        "deno",
        "ruby",
        "php",
        "lua",
        "eval",
    }
)
"""Words of a tool's name that say it runs a program: it may write any file."""
_NAME_WORDS = re.compile(r"[a-z]+")  # over a tool's name (an identifier), not over code

_WRITING_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
READING = frozenset(
    {
        "cat",
        "less",
        "more",
        "head",
        "tail",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ls",
        "wc",
        "echo",
        "printf",
        "pwd",
        "cd",
        "true",
        "false",
        "test",
        "[",
        "stat",
        "file",
        "diff",
        "cmp",
        "uniq",
        "cut",
        "tr",
        "jq",
        "date",
        "whoami",
        "id",
        "which",
        "type",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "du",
        "df",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "nl",
        "tac",
        "rev",
        "column",
        "seq",
        "sleep",
        "exit",
        "base64",
        "od",
        "hexdump",
        "strings",
        "tree",
        "find",
        "sort",
        "sed",
        "curl",
        "wget",
        "dd",
        "read",
        "export",
        "unset",
        "set",
        "shift",
        "return",
        "local",
        "wait",
    }
)
"""Commands that write only through a redirection, or an option read below (``sort -o``)."""
_ALL_ARGS = frozenset({"tee", "touch", "truncate"})
_DESTINATION = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_FIND_WRITES = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_OPTION_WRITERS = frozenset({"find", "sed", "dd", *SPECS})
"""Readers that may write through an option: given a name built at run time, may write any."""
_RECURSIVE = frozenset({"-r", "-R", "-a", "--recursive", "--archive"})


@dataclass
class ShellWrites:
    """What a shell command writes: the targets as written, or why it may write anything."""

    targets: list[str] = field(default_factory=list)
    unknown: str | None = None


def shell_args(tool: str, args: Mapping[str, Any]) -> frozenset[str]:
    """The arguments of a call that are shell commands (module doc).

    Those of :data:`SHELL_ARGS`; when there is none and the tool's name says shell, every
    argument (a ``cwd`` beside a ``command`` is not one, a lone ``input`` is).
    """
    named = frozenset(a for a in args if a.lower() in SHELL_ARGS)
    if named or _SHELL_TOOLS.isdisjoint(_NAME_WORDS.findall(tool.lower())):
        return named
    return frozenset(args)


def runs_code(tool: str) -> bool:
    """Whether a tool's name says it runs a program (``python_repl``, ``jupyter``).

    The program is not read (what it opens is computed at run time): such a writing call
    may write any file, as a shell command the reader cannot read.
    """
    return not _CODE_TOOLS.isdisjoint(_NAME_WORDS.findall(tool.lower()))


def written_by(command: str) -> ShellWrites:
    """The files `command` writes (module doc)."""
    found = ShellWrites()
    if len(command) > MAX_COMMAND_CHARS:
        found.unknown = f"a command longer than {MAX_COMMAND_CHARS} characters is not read"
        return found
    if "\x00" in command:  # a consumer in C reads the command up to the NUL: another command
        found.unknown = "a command holding a NUL byte is read up to it by a C program"
        return found
    try:
        trees = bashlex.parse(command)
    except Exception as error:  # bashlex raises its own errors, and NotImplementedError
        found.unknown = f"the shell parser cannot read it ({type(error).__name__})"
        return found
    stack: list[Any] = list(trees)
    while stack and found.unknown is None:
        node = stack.pop()
        kind = getattr(node, "kind", "")
        if kind == "command":
            _command(node, found)
        elif kind == "redirect":
            _redirect(node, found)
        stack.extend(_children(node))  # a substitution's command is read as any other
    return found


def _children(node: Any) -> list[Any]:
    out: list[Any] = []
    for name in ("parts", "list", "redirects"):
        value = getattr(node, name, None)
        if isinstance(value, list):
            out.extend(value)
    for name in ("command", "output", "body"):
        value = getattr(node, name, None)
        if value is not None and not isinstance(value, int | str):
            out.append(value)
    return out


def _literal(word: Any) -> str | None:
    """A word's text when the shell reads it as written (no expansion built at run time)."""
    if getattr(word, "kind", "") != "word":
        return None
    if any(getattr(p, "kind", "") != "tilde" for p in getattr(word, "parts", ())):
        return None
    return str(word.word)


def _targets(found: ShellWrites, targets: list[str]) -> None:
    """Note written targets; a pattern (``> *.txt``) may name any file it matches.

    So may a word the shell expands by braces (``in{voice.txt,x}`` names ``invoice.txt``).
    """
    if any(c in t for t in targets for c in "*?["):
        found.unknown = "it writes to a file named by a pattern"
    elif any(_braced(t) for t in targets):
        found.unknown = "it writes to a file named by brace expansion"
    found.targets.extend(targets)


def _redirect(node: Any, found: ShellWrites) -> None:
    heredoc = getattr(node, "heredoc", None)
    if heredoc is not None and any(s in str(getattr(heredoc, "value", "")) for s in ("$(", "`")):
        # an unquoted delimiter (bashlex rejects a quoted one) expands the body: it runs
        found.unknown = "a here-document runs the command substitutions in its body"
        return
    if isinstance(node.output, int):
        return  # a descriptor (2>&1, >&2)
    if node.type == ">&" and getattr(node.output, "word", None) != "-":
        pass  # `>&word` with a word that is no descriptor writes the file, as `&>` does
    elif node.type not in _WRITING_REDIRECTS:
        return
    target = _literal(node.output)
    if target is None:
        found.unknown = f"it redirects into a name built at run time ({node.type})"
    else:
        _targets(found, [target])


def _command(node: Any, found: ShellWrites) -> None:
    """Read one simple command's name and arguments (its redirections are read apart)."""
    words = [p for p in node.parts if getattr(p, "kind", "") == "word"]
    if not words:
        return  # assignments and redirections alone
    name = _literal(words[0])
    if name is None:
        found.unknown = "its command name is built at run time"
        return
    name = posixpath.basename(name)
    args = [_literal(w) for w in words[1:]]
    if any(a is None for a in args):
        if name in READING and name not in _OPTION_WRITERS:
            return  # "cat $f" reads
        found.unknown = f"`{name}` is given a name built at run time"
        return
    given = [a for a in args if a is not None]
    plain = [a for a in given if not a.startswith("-")]
    if name in _ALL_ARGS:
        _targets(found, plain)
    elif name in _DESTINATION:
        if name in SPECS and any(o in _RECURSIVE for o, _ in options(name, given)[0]):
            found.unknown = f"`{name}` copies a directory: any file in it, named by nobody"
            return
        _targets(
            found,
            plain[-1:]
            + [posixpath.basename(a.rstrip("/")) for a in plain]
            + _option_values(given, ("-t", "--target-directory")),
        )
    elif name == "sed":
        _sed(given, found)
    elif name == "find":
        if not _FIND_WRITES.isdisjoint(given):
            found.unknown = "`find` runs or writes with -exec/-delete/-fprint"
    elif name == "dd":
        _targets(found, [a[3:] for a in given if a.startswith("of=")])
    elif name in SPECS:
        _outputs(name, given, found)
    elif name not in READING:
        found.unknown = f"`{name}` may write any file"


def _option_values(given: list[str], options: tuple[str, ...]) -> list[str]:
    """The values of options given as ``-o FILE``, ``--output FILE`` or ``--output=FILE``."""
    out: list[str] = []
    for i, a in enumerate(given):
        if a in options and i + 1 < len(given):
            out.append(given[i + 1])
        out.extend(
            a.split("=", 1)[1] for o in options if o.startswith("--") and a.startswith(o + "=")
        )
        out.extend(a[2:] for o in options if len(o) == 2 and a.startswith(o) and len(a) > 2)
    return out


def _sed(given: list[str], found: ShellWrites) -> None:
    """``sed -i`` writes its files; its script may write (``w``) or run commands (``e``)."""
    read, operands = options("sed", given)
    if any(o in ("-f", "--file") for o, _ in read):
        found.unknown = "a `sed` script read from a file may write any file"
        return
    scripts = [v for o, v in read if o in ("-e", "--expression") and v is not None]
    files = operands if scripts else operands[1:]
    for script in scripts or operands[:1]:
        effects = script_effects(script)
        if effects.unreadable is not None or effects.runs:
            why = effects.unreadable or "its e command runs one"
            found.unknown = f"a `sed` script may write any file ({why})"
            return
        _targets(found, effects.writes)
    if any(o in ("-i", "--in-place") for o, _ in read):
        _targets(found, files)


def _outputs(name: str, given: list[str], found: ShellWrites) -> None:
    """A command that writes through its options (:mod:`.shell_options`), ``uniq``'s output."""
    read, operands = options(name, given)
    files, why = written_files(name, read)
    if why is not None:
        found.unknown = why
        return
    _targets(found, files)
    if name == "uniq":
        _targets(found, operands[1:2])  # uniq INPUT OUTPUT
    remote = name == "curl" and any(
        o in ("-O", "--remote-name", "--remote-name-all") for o, _ in read
    )
    if remote or (
        name == "wget" and not any(o in ("-O", "--output-document") and v for o, v in read)
    ):
        found.unknown = f"`{name}` writes a file named by the server"


def _braced(word: str) -> bool:
    """Whether the shell may expand `word` by braces (``a{b,c}``, ``f{1..3}``)."""
    opened = word.find("{")
    closed = word.find("}", opened + 1)
    return 0 <= opened < closed and ("," in word[opened:closed] or ".." in word[opened:closed])
