"""Streamed content by index: blocks started, fed fragments, stopped. One helper for every provider's stream.

Streaming APIs send a message as numbered blocks: OpenAI chat tool-call deltas (``tool_calls[i]``), Anthropic content
blocks (``content_block_start`` / ``_delta`` / ``_stop``), Responses output items (``output_item.added`` / deltas /
``.done``), Bedrock ``contentBlockStart`` / ``Delta`` / ``Stop``, Gemini parts. A provider's accumulator records what
arrives with :class:`IndexedBlocks` and turns each :class:`Block` into its own shape at the end; blocks are read in
index order, whatever order they arrived in.
"""

from __future__ import annotations

from typing import Any


class Block:
    """One block: what started it (an SDK object, a dict, or None when the first delta started it), its text
    fragments, fragments of numbered sub-parts (reasoning summaries), the complete block when the stream gave one,
    and scalar fields a provider fills as they come (an id, a name)."""

    __slots__ = ("done", "fields", "fragments", "parts", "start")

    def __init__(self, start: Any = None) -> None:
        self.start = start
        self.fragments: list[str] = []
        self.parts: dict[int, list[str]] = {}
        self.done: Any = None
        self.fields: dict[str, Any] = {}

    def text(self) -> str:
        return "".join(self.fragments)

    def part_texts(self) -> list[str]:
        """The sub-parts' texts, in index order."""
        return ["".join(self.parts[i]) for i in sorted(self.parts)]


class IndexedBlocks:
    """The blocks of one streamed message, by index."""

    __slots__ = ("_blocks",)

    def __init__(self) -> None:
        self._blocks: dict[int, Block] = {}

    def start(self, index: int, start: Any) -> Block:
        """A block starts (again: a restart replaces it)."""
        block = self._blocks[index] = Block(start)
        return block

    def open(self, index: int) -> Block:
        """The block at ``index``, started empty by this call when there was none (APIs without a start event)."""
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = Block()
        return block

    def get(self, index: int) -> Block | None:
        return self._blocks.get(index)

    def add(self, index: int, fragment: str) -> None:
        """A text fragment for a started block (a fragment for a block never started is dropped)."""
        block = self._blocks.get(index)
        if block is not None:
            block.fragments.append(fragment)

    def add_part(self, index: int, part: int, fragment: str) -> None:
        block = self._blocks.get(index)
        if block is not None:
            block.parts.setdefault(part, []).append(fragment)

    def stop(self, index: int, done: Any = None) -> Block:
        """A block ends; ``done`` is the complete block when the stream sends one (a stop for a block never
        started starts it from ``done``)."""
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = Block(done)
        if done is not None:
            block.done = done
        return block

    def ordered(self) -> list[Block]:
        return [self._blocks[i] for i in sorted(self._blocks)]

    def __len__(self) -> int:
        return len(self._blocks)
