"""The ``spanfold`` subcommands that work on trace files, one click command per module (see ``spanfold.cli``).

:mod:`.inputs` holds what they share: streaming reads with a progress bar, ``FILE:LINE: problem`` reporting,
the exit statuses, and atomic output files.
"""
