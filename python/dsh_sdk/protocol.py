"""Names of the dsh SDK wire protocol (newline-delimited JSON-RPC 2.0 over stdio).

Mirrors ``@dsh/sdk-protocol`` (packages/sdk/protocol/src/wire.ts); keep both in step.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

PROTOCOL_VERSION = 1

# Requests
INITIALIZE = "initialize"
SESSION_CREATE = "session/create"
SESSION_RESUME = "session/resume"
SESSION_PROMPT = "session/prompt"
SESSION_CANCEL = "session/cancel"
SESSION_LIST = "session/list"
SESSION_HISTORY = "session/history"
SESSION_SEARCH = "session/search"
APPROVAL_RESPOND = "approval/respond"
SHUTDOWN = "shutdown"

# Notifications (server to client)
SESSION_EVENT = "session/event"
SESSION_STATUS = "session/status"
APPROVAL_REQUESTED = "approval/requested"
SUBAGENT_STARTED = "subagent/started"
SUBAGENT_FINISHED = "subagent/finished"

# Stable error codes (``error.data.code``) and their JSON-RPC numbers.
ERROR_CODES = {
    "PARSE_ERROR": -32700,
    "INVALID_REQUEST": -32600,
    "METHOD_NOT_FOUND": -32601,
    "INVALID_PARAMS": -32602,
    "INTERNAL": -32603,
    "PROTOCOL_VERSION_MISMATCH": -32001,
    "NOT_INITIALIZED": -32002,
    "SESSION_NOT_FOUND": -32010,
    "BUSY": -32011,
    "PERSISTENCE_UNAVAILABLE": -32012,
    "SESSION_LOCKED": -32013,
    "MODEL_NOT_FOUND": -32014,
    "APPROVAL_NOT_FOUND": -32020,
    "SHUTTING_DOWN": -32030,
}

APPROVAL_DECISIONS = ("allowed-once", "allowed-always", "rejected")


def encode_frame(message: Dict[str, Any]) -> bytes:
    """One JSON value on one line. ``json.dumps`` never emits a raw newline."""
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


def decode_frame(line: bytes) -> Dict[str, Any]:
    """Parses one line; raises ``ValueError`` naming what is wrong with it."""
    try:
        message = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError("frame is not JSON: %s" % error) from None
    if not isinstance(message, dict):
        raise ValueError("frame is a %s, not a JSON-RPC object" % type(message).__name__)
    if message.get("jsonrpc") != "2.0":
        raise ValueError('frame lacks "jsonrpc": "2.0"')
    return message


def error_code(error: Dict[str, Any]) -> str:
    """The stable string code of a JSON-RPC error object."""
    data = error.get("data")
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        return data["code"]
    number: Optional[int] = error.get("code")
    for name, value in ERROR_CODES.items():
        if value == number:
            return name
    return "INTERNAL"
