"""Python SDK for dsh: drive dsh agents through a ``dsh-jsonrpc-agent`` subprocess.

    from dsh_sdk import Harness

    with Harness() as harness:
        result = harness.run("list the files here")
        print(result.final_response)
"""

from .harness import Harness, HarnessError, RunResult, Session, TurnStream
from .protocol import PROTOCOL_VERSION

__all__ = ["Harness", "HarnessError", "RunResult", "Session", "TurnStream", "PROTOCOL_VERSION"]
__version__ = "0.1.0"
