"""The ``spanfold`` command line."""


def main() -> None:
    raise SystemExit("spanfold CLI: not built yet")
