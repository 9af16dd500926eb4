"""Redaction of recorded content: built-in patterns (emails, API keys, bearer tokens, JWTs, AWS secret access keys,
Luhn-valid card numbers, also when sent as JSON numbers) and a user callable, applied to every content string before
spanfold records it.

Turn it on with ``spanfold.init(redact=True)`` (or ``SPANFOLD_REDACT=1``): the built-in patterns. ``redact=fn`` runs
the built-in patterns, then ``fn(text) -> text``; ``redact=Redaction(hook=fn, builtin=False)`` runs ``fn`` alone.
Content is what capture records: message text, reasoning, tool-call arguments, tool results, media URIs, stop
sequences and error messages (strings inside lists and dicts too; keys, roles, ids and tool names are left alone), and
the arguments and result of a
``@spanfold.tool`` function as the text recorded (JSON unless the result is a string). A hook that raises (or returns
something other than a string) is a counted fault, and the content it was given is replaced by :data:`FAILED` rather
than recorded as it was.

Off by default; then the only cost is one ``is None`` check where content is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from spanfold import counters

#: What a hook's failure leaves in place of the content.
FAILED: Final = "[REDACTION FAILED]"


def luhn(digits: str) -> bool:
    """The Luhn checksum of a card number (digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _is_card(match: re.Match[str]) -> bool:
    digits = re.sub(r"[ -]", "", match.group(0))
    return 13 <= len(digits) <= 19 and luhn(digits)


def _mixed_base64(text: str) -> bool:
    return (
        any(c.isupper() for c in text)
        and any(c.islower() for c in text)
        and any(c.isdigit() for c in text)
        and ("/" in text or "+" in text)
    )


@dataclass(frozen=True, slots=True)
class Pattern:
    """A kind of secret: how it looks, an optional check of a match, and what replaces it."""

    name: str
    regex: re.Pattern[str]
    check: Callable[[re.Match[str]], bool] | None = None

    @property
    def replacement(self) -> str:
        return f"[REDACTED:{self.name}]"


#: The built-in patterns, in the order they run.
PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "api_key",
        re.compile(
            r"(?<![A-Za-z0-9])(?:"
            r"sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic
            r"|AKIA[0-9A-Z]{16}"  # AWS access key id
            r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
            r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
            r"|AIza[0-9A-Za-z_-]{35}"  # Google
            r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
            r")"
        ),
    ),
    Pattern("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*")),
    # a JSON Web Token: three base64url segments, the first two of them JSON objects ("eyJ" is '{"')
    Pattern("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    # an AWS secret access key: 40 characters of base64 holding upper, lower, a digit and / or +
    Pattern(
        "aws_secret",
        re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        check=lambda m: _mixed_base64(m.group(0)),
    ),
    Pattern("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
    Pattern("card", re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)"), check=_is_card),
)


def _replacer(pattern: Pattern) -> str | Callable[[re.Match[str]], str]:
    check = pattern.check
    if check is None:
        return pattern.replacement

    def replace(match: re.Match[str]) -> str:
        return pattern.replacement if check(match) else match.group(0)

    return replace


def builtin(text: str) -> str:
    """``text`` with every built-in pattern's matches replaced by ``[REDACTED:<kind>]``."""
    for pattern, replacement in _REPLACERS:
        text = pattern.regex.sub(replacement, text)
    return text


_REPLACERS = [(p, _replacer(p)) for p in PATTERNS]


_CREDENTIALS = [(p, r) for p, r in _REPLACERS if p.name in ("api_key", "bearer", "jwt", "aws_secret")]


def secrets(text: str) -> str:
    """``text`` with API keys and bearer tokens masked: applied to every recorded error message, whatever the
    redaction setting (an error is not content, but a server may echo the key it rejected)."""
    for pattern, replacement in _CREDENTIALS:
        text = pattern.regex.sub(replacement, text)
    return text


class Redaction:
    """A configured redaction: the built-in patterns (unless ``builtin=False``), then ``hook``."""

    __slots__ = ("builtin", "hook")

    def __init__(self, hook: Callable[[str], str] | None = None, *, builtin: bool = True) -> None:
        self.hook = hook
        self.builtin = builtin

    def text(self, text: str) -> str:
        if self.builtin:
            text = builtin(text)
        if self.hook is not None:
            try:
                out = self.hook(text)
            except Exception as exc:
                counters.fault("redact.hook", exc)
                return FAILED
            if not isinstance(out, str):
                counters.fault("redact.hook", TypeError(f"the redaction hook returned {type(out).__name__}"))
                return FAILED
            text = out
        return text

    def value(self, value: Any) -> Any:
        """Every string in ``value`` (itself, or inside lists, tuples and dict values) redacted; a number that reads
        as a secret (a card number sent as a JSON number) becomes the redacted text."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**12:
            text = str(value)
            redacted = self.text(text)
            return value if redacted == text else redacted
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


def from_option(option: Any) -> Redaction | None:
    """The redaction the ``redact`` option asks for: None/False (off), True (built-in patterns), a callable (built-in
    patterns then it), or a :class:`Redaction`."""
    if option is None or option is False:
        return None
    if option is True:
        return Redaction()
    if isinstance(option, Redaction):
        return option
    if callable(option):
        return Redaction(hook=option)
    raise TypeError(f"redact: expected a bool, a callable or a Redaction, got {type(option).__name__}")
