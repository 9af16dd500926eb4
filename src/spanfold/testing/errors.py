"""Error bodies in each provider's shape, with the type and code the real APIs use for a status."""

from __future__ import annotations

from typing import Any

from spanfold.testing.replies import Reply

_OPENAI: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    409: ("invalid_request_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}

_ANTHROPIC: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def openai_error(reply: Reply, param: str | None = None) -> dict[str, Any]:
    """``{"error": {"message", "type", "param", "code"}}`` (Chat Completions and Responses)."""
    default_type, default_code = _OPENAI.get(reply.status, ("server_error", None))
    return {
        "error": {
            "message": reply.message,
            "type": reply.error_type or default_type,
            "param": param,
            "code": reply.error_code if reply.error_code is not None else default_code,
        }
    }


def anthropic_error(reply: Reply) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}`` (Messages)."""
    default_type = _ANTHROPIC.get(reply.status, "api_error" if reply.status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": reply.error_type or default_type, "message": reply.message}}
