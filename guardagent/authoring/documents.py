"""Policy documents as sections with stable references: Markdown, plain text, HTML and PDF.

Extraction asks a model about one section at a time and every extracted rule must point
back at the words it came from, so each paragraph gets a reference that survives edits
elsewhere in the document: ``file#heading/path:pN`` (headings slugged, paragraphs counted
within their section, PDF pages as ``page-N`` headings when the text has none). A reviewer
can find the paragraph from the reference alone.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from guardagent.readers.textio import read_text_file


class DocumentError(ValueError):
    """A document that cannot be read (unknown type, unreadable file, broken PDF)."""


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of a section.

    Attributes:
        ref: Stable reference, ``file#heading/path:pN``.
        text: The paragraph text, whitespace-normalised.
    """

    ref: str
    text: str


@dataclass(frozen=True)
class Section:
    """Consecutive paragraphs under one heading path.

    Attributes:
        file: The document's file name (no directory: references stay stable when moved).
        headings: Heading titles from the top level down (empty before the first heading).
        paragraphs: The section's paragraphs, in order.
    """

    file: str
    headings: tuple[str, ...]
    paragraphs: tuple[Paragraph, ...] = field(default=())

    @property
    def ref(self) -> str:
        """The section's reference, ``file#heading/path``."""
        return f"{self.file}#{'/'.join(slug(h) for h in self.headings) or 'top'}"

    @property
    def title(self) -> str:
        """Heading path for people: ``Access > Customer records``."""
        return " > ".join(self.headings) or "(before the first heading)"

    @property
    def text(self) -> str:
        """The paragraphs, each on its own line after its reference."""
        return "\n\n".join(f"[{p.ref}]\n{p.text}" for p in self.paragraphs)


def slug(text: str) -> str:
    """A heading as a reference segment: lower case ASCII words joined by ``-``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    return "-".join(words) or "section"


def normalize_space(text: str) -> str:
    """Runs of whitespace as one space, trimmed (how spans are compared)."""
    return " ".join(text.split())


# --------------------------------------------------------------------------- blocks

Block = tuple[int, str]
"""(heading level, text) for a heading; (0, text) for a paragraph."""


def _markdown_blocks(text: str) -> list[Block]:
    """Headings (ATX ``#`` and setext underlines) and blank-line separated paragraphs.

    List items each count as a paragraph: policies are often written as bullet lists and a
    reference to one bullet is what a reviewer needs. Fenced code is kept as one paragraph.
    """
    blocks: list[Block] = []
    lines = text.splitlines()
    buffer: list[str] = []
    fence = False

    def flush() -> None:
        if buffer:
            joined = normalize_space(" ".join(buffer))
            if joined:
                blocks.append((0, joined))
            buffer.clear()

    for i, raw in enumerate(lines):
        line = raw.rstrip()
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
            if not fence:
                flush()
            continue
        if fence:
            buffer.append(stripped)
            continue
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", stripped)
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if heading:
            flush()
            blocks.append((len(heading.group(1)), heading.group(2)))
        elif stripped and not buffer and nxt and set(nxt) <= {"="} | {"-"} and len(nxt) >= 3:
            flush()
            blocks.append((1 if nxt[0] == "=" else 2, stripped))
        elif stripped and set(stripped) <= {"=", "-"} and len(stripped) >= 3 and not buffer:
            continue  # the underline of a setext heading just emitted
        elif not stripped:
            flush()
        elif re.match(r"^([-*+]|\d+[.)])\s+", stripped):
            flush()
            buffer.append(re.sub(r"^([-*+]|\d+[.)])\s+", "", stripped))
        else:
            buffer.append(stripped)
    flush()
    return blocks


def _text_blocks(text: str) -> list[Block]:
    """Plain text: blank-line separated paragraphs, no headings."""
    return [(0, normalize_space(p)) for p in re.split(r"\n\s*\n", text) if p.strip()]


class _HTMLBlocks(HTMLParser):
    """Headings ``h1``-``h6`` and block elements (``p``, ``li``, ``td``, ...) as blocks."""

    BLOCK = frozenset({"p", "li", "td", "th", "dd", "dt", "blockquote", "pre", "div", "tr"})
    SKIP = frozenset({"script", "style", "head", "title", "nav"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self._text: list[str] = []
        self._level = 0
        self._skip = 0

    def _flush(self) -> None:
        text = normalize_space("".join(self._text))
        self._text = []
        if text:
            self.blocks.append((self._level, text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skip += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._level = int(tag[1])
        elif tag in self.BLOCK or tag == "br":
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._level = 0
        elif tag in self.BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _html_blocks(text: str) -> list[Block]:
    parser = _HTMLBlocks()
    parser.feed(text)
    parser.close()
    return parser.blocks


def _pdf_blocks(path: Path) -> list[Block]:
    """Each page's text as Markdown-like blocks, under a ``Page N`` heading."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise DocumentError(
            f"{path.name}: reading PDF needs pypdf (pip install 'pypdf>=4,<8')"
        ) from None
    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, OSError, ValueError) as exc:
        raise DocumentError(f"{path.name}: cannot read the PDF: {exc}") from None
    blocks: list[Block] = []
    for number, page in enumerate(pages, 1):
        blocks.append((1, f"Page {number}"))
        blocks += _text_blocks(page)
    return blocks


def _sections(file: str, blocks: list[Block], *, strip_title: bool = True) -> list[Section]:
    """Group paragraphs under their heading path.

    A document with a single top-level heading (its title) leaves it out of the paths, so
    references stay short: ``policy.md#refunds:p2`` rather than ``policy.md#title/refunds:p2``.
    """
    tops = [i for i, (level, _) in enumerate(blocks) if level == 1]
    if strip_title and len(tops) == 1 and tops[0] == 0:
        blocks = blocks[1:]
    out: list[Section] = []
    path: list[tuple[int, str]] = []
    paragraphs: list[str] = []

    def close() -> None:
        if paragraphs:
            headings = tuple(t for _, t in path)
            section = Section(file, headings)
            refs = tuple(Paragraph(f"{section.ref}:p{i}", p) for i, p in enumerate(paragraphs, 1))
            out.append(Section(file, headings, refs))
            paragraphs.clear()

    for level, text in blocks:
        if level:
            close()
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, text))
        else:
            paragraphs.append(text)
    close()
    return _unique(out)


def _unique(sections: list[Section]) -> list[Section]:
    """Sections sharing a heading path (repeated headings) get ``~2``, ``~3`` suffixes."""
    seen: dict[str, int] = {}
    out: list[Section] = []
    for section in sections:
        count = seen.get(section.ref, 0) + 1
        seen[section.ref] = count
        if count == 1:
            out.append(section)
            continue
        headings = (
            *section.headings[:-1],
            f"{section.headings[-1] if section.headings else 'top'} ~{count}",
        )
        fresh = Section(section.file, headings)
        out.append(
            Section(
                section.file,
                headings,
                tuple(
                    Paragraph(f"{fresh.ref}:p{i}", p.text)
                    for i, p in enumerate(section.paragraphs, 1)
                ),
            )
        )
    return out


def read_document(path: str | Path) -> list[Section]:
    """The sections of one document, by its suffix (.md, .markdown, .txt, .html, .htm, .pdf).

    Raises:
        DocumentError: unknown type or unreadable file.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".pdf":
        return _sections(file.name, _pdf_blocks(file), strip_title=False)
    try:
        text = read_text_file(file)
    except (OSError, ValueError) as exc:
        raise DocumentError(f"cannot read {file}: {exc}") from None
    if suffix in (".md", ".markdown"):
        blocks = _markdown_blocks(text)
    elif suffix in (".html", ".htm"):
        blocks = _html_blocks(text)
    elif suffix in (".txt", ".text", ""):
        blocks = _text_blocks(text)
    else:
        raise DocumentError(
            f"{file.name}: unknown document type {suffix!r} (use .md, .txt, .html or .pdf)"
        )
    return _sections(file.name, blocks)
