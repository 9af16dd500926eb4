"""Small text helpers for reasons and tables: cut text to a width, count with a noun."""

from __future__ import annotations


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, its start kept and the cut marked ``...``."""
    return text if len(text) <= width else text[: width - 3] + "..."


def clip_left(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, its end kept (long paths keep their file name and line)."""
    return text if len(text) <= width else "..." + text[len(text) - width + 3 :]


def plural(n: int, word: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


#: Characters a terminal acts on instead of showing: C0 controls, DEL, C1 controls (8-bit CSI/OSC), bidirectional
#: overrides and isolates (text that reads differently than it is), line and paragraph separators.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
_UNSAFE = [*range(0x20), *range(0x7F, 0xA0), *map(ord, _BIDI)]


_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _shown(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_LINE_TABLE = {code: _shown(code) for code in _UNSAFE}
_TEXT_TABLE = {code: shown for code, shown in _LINE_TABLE.items() if code not in (0x09, 0x0A)}


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` safe to print on a terminal: every control character shown as ``\\x1b``-style text, so content from
    a model or a tool can neither move the cursor, set the window title, write the clipboard (OSC 52) nor hide text.
    ``multiline`` keeps newlines (``\\r\\n`` read as one) and expands tabs; else they show as ``\\n`` and ``\\t``."""
    if multiline:
        text = text.replace("\r\n", "\n")
        if "\t" in text:
            text = text.expandtabs(4)
        return text.translate(_TEXT_TABLE)
    return text.translate(_LINE_TABLE)


def clip_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in the middle (``traces/ru…/traces.jsonl:12``): a path keeps its start
    and its file name and line."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    tail = (width - 1) // 2 + (width - 1) % 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


def wrap_items(items: list[str], width: int, separator: str = ", ") -> list[str]:
    """Join ``items`` into lines of at most ``width`` characters, breaking only between items (an item longer than
    the width is cut in the middle)."""
    lines: list[str] = []
    line = ""
    for item in items:
        item = clip_middle(item, width)
        candidate = f"{line}{separator}{item}" if line else item
        if line and len(candidate) + len(separator.rstrip()) > width:
            lines.append(line + separator.rstrip())
            line = item
        else:
            line = candidate
    if line:
        lines.append(line)
    return lines
