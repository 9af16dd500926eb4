"""``spanfold ui``: a local web page over a directory of traces (the index, the server and the static page)."""
