"""What a model call cost: prices from a maintained table, offline, and the user's own.

* :mod:`~spanfold.pricing.table`: `genai-prices <https://github.com/pydantic/genai-prices>`_ (the ``cost`` extra:
  ``pip install 'spanfold[cost]'``): per provider, model and date, cache- and reasoning-aware. Only the snapshot the
  package bundles is read; spanfold never fetches prices. A program that wants current prices starts genai-prices's
  ``UpdatePrices`` itself, and spanfold then prices with what it fetched.
* :mod:`~spanfold.pricing.overrides`: prices the user gives (a model served on their own hardware, a negotiated rate)
  in a small file or in code (``spanfold.init(prices=...)``, ``SPANFOLD_PRICES``), read and checked when the options
  are; they win over the table.

Ground floor: imports neither half. The fold prices each model call with it (:mod:`spanfold.exporter.fold.cost`).
"""
