"""The stitcher's names as ``spanfold ui``'s span-file index imports them (:func:`placed_at_source`). The stitcher is
a unit of the runs stage, before the fold: :mod:`spanfold.exporter.runs.stitch`."""

from __future__ import annotations

from spanfold.exporter.runs.stitch import Conversation, Stitcher, placed_at_source, stitch_root

__all__ = ["Conversation", "Stitcher", "placed_at_source", "stitch_root"]
