"""JSON on the hot paths: jsonio (orjson encodes, msgspec parses: the standard library's values, faster) and
json_prefix (only the new tail of a growing array)."""
