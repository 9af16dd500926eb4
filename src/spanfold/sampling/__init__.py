"""Whole-run sampling: which folded runs are kept. :mod:`.option` is the ``sample`` option (:class:`Sample`, its text
form); :mod:`.decision` decides per run (``Sampler``, asked by the exporter's assembler on the fold's worker before
the writers and the OTLP export see a run).

Ground floor: imports neither half. ``spanfold.init(sample=...)``, ``SPANFOLD_SAMPLE`` and ``spanfold serve --sample``
make one.
"""

from spanfold.sampling.option import Check, Sample, parse

__all__ = ["Check", "Sample", "parse"]
