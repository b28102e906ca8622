"""Strings from profiles made safe to show: a kernel name is data from a file, and a file can
be hostile.

A name holding ESC sequences can clear the screen, set the window title, plant an OSC 8
hyperlink or hide the text after it; BiDi overrides reorder what is read; a newline forges a
line of output, and in markdown a heading. :func:`terminal` is the one function every text
output passes profile strings (and, as a last pass, whole documents) through; the markdown
renderer puts names in code spans (:func:`markdown_code`) and escapes prose
(:func:`markdown_text`). JSON and CSV outputs are data and stay exact.
"""

from __future__ import annotations

import re

# Characters with an effect beyond showing a glyph: C0 and C1 controls and DEL (ESC starts
# CSI/OSC sequences; CR returns over the line), lone surrogates (undecodable bytes kept by
# surrogateescape, which cannot even be printed), line/paragraph separators, and every
# Unicode format character (Cf: BiDi embeddings, overrides and isolates, zero-width
# characters, the BOM, tag characters). tests/test_hostile_input.py checks this class
# against unicodedata for every code point.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)
_UNSAFE_KEEPING_NEWLINES = re.compile(_UNSAFE.pattern.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f"))
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~&!])")
_BACKTICKS = re.compile(r"`+")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    if match.group() in _NAMED:
        return _NAMED[match.group()]
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal(text: object, newlines: bool = False) -> str:
    """``text`` with every control, format and separator character shown as a visible escape
    (ESC as ``\\x1b``, U+202E as ``\\u202e``): inert on any terminal. Newlines are escaped too
    (one line stays one line) unless ``newlines`` is set, for whole documents."""
    return (_UNSAFE_KEEPING_NEWLINES if newlines else _UNSAFE).sub(_escape, str(text))


def markdown_code(text: object) -> str:
    """``text`` as one markdown code span: nothing in it renders (no HTML, no emphasis of
    ``__shared__``), on one line, with a fence longer than any backtick run inside."""
    safe = terminal(text)
    longest = max((len(run) for run in _BACKTICKS.findall(safe)), default=0)
    fence = "`" * (longest + 1)
    # A span that starts or ends with a backtick (or is all spaces) needs padding, which
    # CommonMark strips again.
    pad = " " if not safe.strip(" ") or safe.startswith("`") or safe.endswith("`") else ""
    return f"{fence}{pad}{safe}{pad}{fence}"


def markdown_text(text: object) -> str:
    """``text`` as markdown prose that renders as written: one line, with the characters that
    would start emphasis, code, links, HTML, entities, tables or headings backslash-escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", terminal(text))
