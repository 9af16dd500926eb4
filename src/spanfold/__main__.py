"""``python -m spanfold``: the command line."""

from spanfold.cli import main

main(prog_name="spanfold")
