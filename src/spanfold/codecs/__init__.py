"""JSON on the hot paths: jsonio (the standard library's bytes, faster) and json_prefix (only the new tail of a
growing array)."""
