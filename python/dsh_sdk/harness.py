"""The Harness: one ``dsh-jsonrpc-agent`` subprocess and the sessions it serves.

A reader thread owns the server's stdout: it resolves pending requests and routes notifications
to the session they name. Each prompt installs a turn collector before the request is sent, so
no event of the turn can be missed; the collector yields ``turn/start`` .. ``turn/end`` and then
carries the turn's result from the ``idle`` status notification.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from . import protocol as p

Event = Dict[str, Any]
ApprovalHandler = Callable[[Dict[str, Any]], Union[str, Dict[str, Any]]]


class HarnessError(Exception):
    """Every failure the SDK reports. ``code`` is a protocol ``data.code`` or one of:
    SERVER_EXITED, PROTOCOL_ERROR, SPAWN_FAILED, BIN_NOT_FOUND, TIMEOUT."""

    def __init__(self, code: str, message: str, details: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.message)


@dataclass
class RunResult:
    session_id: str
    final_response: str
    #: completed | cancelled | error | max-tokens | blocked | interrupted
    finish_reason: str
    events: List[Event] = field(default_factory=list)
    turn: int = 0
    usage: Dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    error: Optional[Dict[str, Any]] = None


_LIVE: "weakref.WeakSet[Harness]" = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for harness in list(_LIVE):
        harness._kill_now()


def _command(bin: Union[None, str, Sequence[str]]) -> List[str]:
    if bin is None:
        found = shutil.which("dsh-jsonrpc-agent")
        if not found:
            raise HarnessError("BIN_NOT_FOUND", "dsh-jsonrpc-agent is not on PATH; pass Harness(bin=...)")
        return [found]
    if isinstance(bin, str):
        if bin.endswith((".mjs", ".cjs", ".js", ".ts", ".mts")):
            node = shutil.which("node") or "node"
            return [node, bin]
        return [bin]
    return list(bin)


class _Pending:
    __slots__ = ("done", "result", "error", "method")

    def __init__(self, method: str):
        self.method = method
        self.done = threading.Event()
        self.result: Any = None
        self.error: Optional[HarnessError] = None


_END = object()


class TurnStream:
    """Iterator over one turn's events. After it is exhausted, ``result`` holds the RunResult."""

    def __init__(self, session: "Session"):
        self._session = session
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._started = False
        self._ended = False
        self.turn: Optional[int] = None
        self.events: List[Event] = []
        self.result: Optional[RunResult] = None
        self._error: Optional[HarnessError] = None
        self._finished = False

    # Called on the reader thread.
    def _offer(self, event: Event) -> None:
        if self._ended:
            return
        if not self._started:
            if event.get("type") != "turn/start":
                return
            if self.turn is not None and event.get("data", {}).get("turn") != self.turn:
                return
            self._started = True
        if event.get("type") == "turn/end":
            self._ended = True
        self._queue.put(("event", event))

    def _settle(self, result: Dict[str, Any]) -> None:
        self._ended = True
        self._queue.put(("result", result))

    def _fail(self, error: HarnessError) -> None:
        self._ended = True
        self._queue.put(("error", error))

    def __iter__(self) -> "TurnStream":
        return self

    def __next__(self) -> Event:
        if self._finished:
            if self._error:
                raise self._error
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "event":
            self.events.append(value)
            return value
        self._finished = True
        if kind == "error":
            self._error = value
            raise value
        self.result = RunResult(
            session_id=self._session.id,
            final_response=value.get("text", ""),
            finish_reason=value.get("reason", ""),
            events=self.events,
            turn=value.get("turn", 0),
            usage=value.get("usage", {}),
            steps=value.get("steps", 0),
            error=value.get("error"),
        )
        raise StopIteration

    def wait(self) -> RunResult:
        """Consumes the remaining events and returns the result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result


class Session:
    """One agent session in the server."""

    def __init__(self, harness: "Harness", info: Dict[str, Any]):
        self._harness = harness
        self.id: str = info["sessionId"]
        self.cwd: str = info["cwd"]
        self.model: Dict[str, str] = info.get("model", {})
        self.status = "idle"
        self._active: Optional[TurnStream] = None
        self._listeners: List[Callable[[Event], None]] = []
        self._subagent_listeners: List[Callable[[Dict[str, Any]], None]] = []

    def stream(self, prompt: str) -> TurnStream:
        """Sends a prompt; iterate the result for the turn's events."""
        if self._active is not None:
            raise HarnessError("BUSY", "session %s is already running a turn; wait for it or cancel() it" % self.id)
        stream = TurnStream(self)
        self._active = stream
        try:
            accepted = self._harness._call(p.SESSION_PROMPT, {"sessionId": self.id, "prompt": prompt})
        except HarnessError:
            self._active = None
            raise
        if stream.turn is None:
            stream.turn = accepted.get("turn")
        return stream

    def run(self, prompt: str) -> RunResult:
        """Sends a prompt and blocks until the turn ended."""
        return self.stream(prompt).wait()

    def cancel(self) -> bool:
        """Cancels the running turn; True when one was running."""
        return bool(self._harness._call(p.SESSION_CANCEL, {"sessionId": self.id}).get("cancelled"))

    def history(self, from_seq: int = 0, limit: Optional[int] = None) -> List[Event]:
        params: Dict[str, Any] = {"sessionId": self.id, "fromSeq": from_seq}
        if limit is not None:
            params["limit"] = limit
        return self._harness._call(p.SESSION_HISTORY, params)["events"]

    def on_event(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Calls ``listener(event)`` (on the reader thread) for every event; returns the remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def on_subagent(self, listener: Callable[[Dict[str, Any]], None]) -> Callable[[], None]:
        """Calls ``listener(notification)`` (on the reader thread) for every ``subagent/started``
        (``status`` "running") and ``subagent/finished`` notification of this session's children,
        at any depth; returns the remover."""
        self._subagent_listeners.append(listener)
        return lambda: self._subagent_listeners.remove(listener)

    # Reader thread.
    def _subagent(self, params: Dict[str, Any]) -> None:
        for listener in list(self._subagent_listeners):
            try:
                listener(params)
            except Exception as error:  # a listener bug must not kill the reader thread
                print("dsh_sdk: subagent listener failed: %r" % (error,), file=sys.stderr)

    def _deliver(self, event: Event) -> None:
        active = self._active
        if active is not None:
            active._offer(event)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as error:  # a listener bug must not kill the reader thread
                print("dsh_sdk: event listener failed: %r" % (error,), file=sys.stderr)

    def _status(self, params: Dict[str, Any]) -> None:
        self.status = params.get("status", self.status)
        result = params.get("result")
        active = self._active
        if active is not None and result is not None and (active.turn is None or result.get("turn") == active.turn):
            self._active = None
            active._settle(result)

    def _fail(self, error: HarnessError) -> None:
        active = self._active
        self._active = None
        if active is not None:
            active._fail(error)


class Harness:
    """Spawns ``bin`` (default: ``dsh-jsonrpc-agent`` on PATH) and speaks the protocol with it.

    ``run``/``stream`` use the harness's current session, created at first use (so consecutive
    runs continue one conversation); ``new_session()`` starts another.
    """

    def __init__(
        self,
        bin: Union[None, str, Sequence[str]] = None,
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        *,
        args: Sequence[str] = (),
        model: Optional[str] = None,
        on_approval: Optional[ApprovalHandler] = None,
        timeout: Optional[float] = None,
    ):
        self.cwd = os.path.abspath(cwd) if cwd else os.getcwd()
        self.model = model
        self.timeout = timeout
        self._on_approval = on_approval
        self._sessions: Dict[str, Session] = {}
        self._pending: Dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._next_id = 1
        self._failure: Optional[HarnessError] = None
        self._closing = False
        self._stderr_tail: List[str] = []
        self._session: Optional[Session] = None
        command = _command(bin) + list(args)
        self._command = command
        try:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                bufsize=0,
            )
        except OSError as error:
            raise HarnessError("SPAWN_FAILED", "cannot start %s: %s" % (" ".join(command), error)) from None
        _LIVE.add(self)
        self._reader = threading.Thread(target=self._read_loop, name="dsh-sdk-reader", daemon=True)
        self._stderr_reader = threading.Thread(target=self._stderr_loop, name="dsh-sdk-stderr", daemon=True)
        self._stderr_reader.start()
        self._reader.start()
        try:
            info = self._call(p.INITIALIZE, {"protocolVersion": p.PROTOCOL_VERSION, "clientInfo": {"name": "dsh_sdk"}})
            if info.get("protocolVersion") != p.PROTOCOL_VERSION:
                raise HarnessError(
                    "PROTOCOL_VERSION_MISMATCH",
                    "the server speaks protocol %r, this client %d" % (info.get("protocolVersion"), p.PROTOCOL_VERSION),
                )
        except BaseException:
            self.close()
            raise
        self.server_info: Dict[str, Any] = info.get("serverInfo", {})
        self.capabilities: Dict[str, Any] = info.get("capabilities", {})

    # ---- public API ----

    @property
    def pid(self) -> int:
        return self._proc.pid

    def create_session(self, cwd: Optional[str] = None, model: Optional[str] = None) -> Session:
        params: Dict[str, Any] = {"cwd": os.path.abspath(cwd) if cwd else self.cwd}
        if model or self.model:
            params["model"] = model or self.model
        session = Session(self, self._call(p.SESSION_CREATE, params))
        self._sessions[session.id] = session
        return session

    def resume_session(self, session_id: str) -> Session:
        existing = self._sessions.get(session_id)
        if existing is not None:
            return existing
        session = Session(self, self._call(p.SESSION_RESUME, {"sessionId": session_id}))
        self._sessions[session.id] = session
        self._session = session
        return session

    def new_session(self, cwd: Optional[str] = None, model: Optional[str] = None) -> Session:
        """Creates a session and makes it the one ``run``/``stream`` use."""
        self._session = self.create_session(cwd, model)
        return self._session

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = self.create_session()
        return self._session

    def run(self, prompt: str) -> RunResult:
        return self.session.run(prompt)

    def stream(self, prompt: str) -> TurnStream:
        return self.session.stream(prompt)

    def cancel(self) -> bool:
        return self._session.cancel() if self._session is not None else False

    def list_sessions(self, cwd: Optional[str] = None) -> List[Dict[str, Any]]:
        return self._call(p.SESSION_LIST, {"cwd": cwd} if cwd else {})["sessions"]

    def search_sessions(self, text: str, cwd: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Sessions (stored and live) whose log contains ``text`` as a literal phrase.

        One hit per session, best first: dicts with ``sessionId``, ``cwd``, ``title``,
        ``updatedAt``, ``live``, ``seq``, ``type``, ``snippet`` (the match in [brackets]) and
        ``matches``. ``text`` needs at least 3 characters; quotes and FTS operators are plain
        text. Raises ``METHOD_NOT_FOUND`` when the server has no session-query row
        (``capabilities["search"]`` is false).
        """
        if not isinstance(text, str):
            raise HarnessError("INVALID_PARAMS", "search_sessions: text must be a string, not %s" % type(text).__name__)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise HarnessError("INVALID_PARAMS", "search_sessions: limit must be a positive integer, not %r" % (limit,))
        params: Dict[str, Any] = {"text": text}
        if cwd is not None:
            params["cwd"] = os.path.abspath(cwd)
        if limit is not None:
            params["limit"] = limit
        return self._call(p.SESSION_SEARCH, params)["hits"]

    def close(self, timeout: float = 5.0) -> None:
        """Shuts the server down (``shutdown``, end of stdin, then terminate/kill)."""
        if self._closing:
            self._wait_exit(timeout)
            return
        self._closing = True
        if self._failure is None and self._proc.poll() is None:
            try:
                self._call(p.SHUTDOWN, {}, timeout=timeout)
            except HarnessError:
                pass
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        if not self._wait_exit(timeout):
            self._proc.terminate()
            if not self._wait_exit(2.0):
                self._proc.kill()
                self._wait_exit(None)
        self._reader.join(timeout)
        self._stderr_reader.join(timeout)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
        _LIVE.discard(self)

    def __enter__(self) -> "Harness":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- internals ----

    def _wait_exit(self, timeout: Optional[float]) -> bool:
        try:
            self._proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _kill_now(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()

    def _call(self, method: str, params: Dict[str, Any], timeout: Optional[float] = None) -> Dict[str, Any]:
        pending = _Pending(method)
        with self._lock:
            if self._failure is not None:
                raise self._failure
            request_id = self._next_id
            self._next_id += 1
            self._pending[request_id] = pending
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        except OSError:
            pass  # the server is gone; the reader thread reports how
        if not pending.done.wait(timeout if timeout is not None else self.timeout):
            with self._lock:
                self._pending.pop(request_id, None)
            raise HarnessError("TIMEOUT", "%s: no response within %ss" % (method, timeout or self.timeout))
        if pending.error is not None:
            raise pending.error
        return pending.result if isinstance(pending.result, dict) else {}

    def _write(self, message: Dict[str, Any]) -> None:
        data = p.encode_frame(message)
        with self._write_lock:
            self._proc.stdin.write(data)  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]

    def _fail(self, error: HarnessError) -> None:
        with self._lock:
            if self._failure is not None:
                return
            self._failure = error
            pending = list(self._pending.values())
            self._pending.clear()
        for item in pending:
            item.error = error
            item.done.set()
        for session in list(self._sessions.values()):
            session._fail(error)

    def _stderr_loop(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        for line in iter(stream.readline, b""):
            self._stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))
            del self._stderr_tail[:-20]

    def _read_loop(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        try:
            for line in iter(stream.readline, b""):
                if not line.strip():
                    continue
                try:
                    message = p.decode_frame(line)
                except ValueError as error:
                    self._fail(HarnessError("PROTOCOL_ERROR", "protocol error from %s: %s" % (self._command[-1], error)))
                    self._kill_now()  # the stream cannot be resynchronised
                    return
                self._dispatch(message)
        finally:
            code = self._proc.wait()
            self._stderr_reader.join(2.0)
            how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
            tail = "\n".join(self._stderr_tail[-5:])
            suffix = " (closed by the client)" if self._closing else ""
            self._fail(HarnessError("SERVER_EXITED", "dsh-jsonrpc-agent %s%s%s" % (how, suffix, "; stderr:\n" + tail if tail else ""), {"code": code}))

    def _dispatch(self, message: Dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params") or {}
            if "id" in message:
                # The client serves no methods.
                error = {"code": p.ERROR_CODES["METHOD_NOT_FOUND"], "message": "the client serves no method %r" % method, "data": {"code": "METHOD_NOT_FOUND"}}
                try:
                    self._write({"jsonrpc": "2.0", "id": message["id"], "error": error})
                except OSError:
                    pass
            elif method == p.SESSION_EVENT:
                session = self._sessions.get(params.get("sessionId"))
                if session is not None:
                    session._deliver(params["event"])
            elif method == p.SESSION_STATUS:
                session = self._sessions.get(params.get("sessionId"))
                if session is not None:
                    session._status(params)
            elif method in (p.SUBAGENT_STARTED, p.SUBAGENT_FINISHED):
                session = self._sessions.get(params.get("sessionId"))
                if session is not None:
                    session._subagent(params)
            elif method == p.APPROVAL_REQUESTED:
                threading.Thread(target=self._answer_approval, args=(params,), daemon=True).start()
            return
        request_id = message.get("id")
        with self._lock:
            pending = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if pending is None:
            self._fail(HarnessError("PROTOCOL_ERROR", "response for unknown request id %r" % (request_id,)))
            self._kill_now()
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            pending.error = HarnessError(p.error_code(error), str(error.get("message", "")), dict(data))
        else:
            pending.result = message.get("result")
        pending.done.set()

    def _answer_approval(self, params: Dict[str, Any]) -> None:
        answer: Dict[str, Any]
        try:
            if self._on_approval is None:
                answer = {"decision": "rejected", "reason": "the SDK client has no approval handler"}
            else:
                given = self._on_approval(params)
                answer = {"decision": given} if isinstance(given, str) else dict(given)
        except Exception as error:
            answer = {"decision": "rejected", "reason": "the approval handler failed: %s" % error}
        answer["requestId"] = params.get("requestId")
        try:
            self._call(p.APPROVAL_RESPOND, answer)
        except HarnessError:
            pass
