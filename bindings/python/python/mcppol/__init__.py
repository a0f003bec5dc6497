"""mcppol: policy-as-data for the tool calls AI agents make over MCP.

The same engine as the `mcppol` command line, in process: load a policy,
decide tool calls, resource reads and prompt gets. See docs/python.md.
"""

from mcppol._mcppol import (
    MAX_ARGUMENT_BYTES,
    MAX_ARGUMENT_DEPTH,
    MAX_TAINT,
    Decision,
    Diagnostic,
    Policy,
    PolicyError,
    RequestError,
    Store,
    __version__,
    fingerprint,
)

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_TAINT",
    "Decision",
    "Diagnostic",
    "Policy",
    "PolicyError",
    "RequestError",
    "Store",
    "__version__",
    "fingerprint",
]
