"""End-to-end tests: the real dsh-jsonrpc-agent (Node) against the scripted llm-mock-server.

Skipped when node or the repository's node_modules are missing.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from anywhere

from dsh_sdk import Harness, HarnessError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.path.join(REPO, "packages", "sdk", "server", "bin", "dsh-jsonrpc-agent.mjs")
MOCK_BIN = os.path.join(REPO, "packages", "test-support", "llm-mock-server", "bin", "dsh-llm-mock-server.mjs")
FAKE = [sys.executable, os.path.join(HERE, "fixtures", "malformed_server.py")]
NODE = shutil.which("node")
READY = NODE is not None and os.path.isdir(os.path.join(REPO, "packages", "sdk", "server", "node_modules"))


class MockServer:
    """The llm-mock-server bin serving one script; its base URL is its only stdout line."""

    def __init__(self, steps, directory):
        script = os.path.join(directory, "script.json")
        with open(script, "w") as f:
            json.dump({"steps": steps}, f)
        self.proc = subprocess.Popen([NODE, MOCK_BIN, "--script", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.base_url = self.proc.stdout.readline().decode().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError("mock server did not start")

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        self.proc.stdout.close()


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie counts as gone
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@unittest.skipUnless(READY, "node and the workspace install are needed")
class HarnessTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dsh-sdk-py-")
        self.home = os.path.join(self.dir, "home")
        self.mocks = []

    def tearDown(self):
        for mock in self.mocks:
            mock.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def harness(self, steps, **kwargs):
        mock = MockServer(steps, self.dir)
        self.mocks.append(mock)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", self.dir),
            "DSH_HOME": self.home,
            "DEEPSEEK_BASE_URL": mock.base_url,
            "DEEPSEEK_API_KEY": "sk-test-not-a-real-key",
        }
        return Harness(bin=kwargs.pop("bin", BIN), cwd=self.dir, env=env, **kwargs)

    def assertContiguous(self, events):
        seqs = [e["seq"] for e in events]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))))

    def test_run_with_a_tool_call(self):
        with open(os.path.join(self.dir, "marker.txt"), "w") as f:
            f.write("hello-from-disk\n")
        steps = [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "cat marker.txt", "description": "read it"}}]},
            {"text": "The marker says hello."},
        ]
        with self.harness(steps) as harness:
            self.assertEqual(harness.server_info["name"], "dsh-jsonrpc-agent")
            result = harness.run("what does marker.txt say?")
            self.assertEqual(result.final_response, "The marker says hello.")
            self.assertEqual(result.finish_reason, "completed")
            self.assertEqual(result.steps, 2)
            types = [e["type"] for e in result.events]
            self.assertEqual(types[0], "turn/start")
            self.assertEqual(types[-1], "turn/end")
            self.assertIn("tool/call", types)
            tool_result = next(e for e in result.events if e["type"] == "tool/result")
            self.assertIn("hello-from-disk", json.dumps(tool_result["data"]))
            self.assertContiguous(result.events)
            self.assertEqual(result.session_id, harness.session.id)

    def test_subagent_notifications(self):
        steps = [
            {"toolCalls": [{"name": "subagent", "arguments": {"description": "helper", "prompt": "answer"}}]},
            {"text": "child answer"},
            {"text": "parent done"},
        ]
        with self.harness(steps) as harness:
            session = harness.create_session()
            seen = []
            session.on_subagent(seen.append)
            result = session.run("delegate")
            self.assertEqual(result.final_response, "parent done")
            self.assertEqual([(n["description"], n["status"]) for n in seen], [("helper", "running"), ("helper", "completed")])
            self.assertEqual(seen[0]["parentSessionId"], session.id)
            self.assertEqual(seen[1]["provider"], "spawn")
            self.assertEqual(seen[1]["text"], "child answer")
            self.assertGreater(seen[1]["usage"]["input"], 0)

    def test_stream_yields_events_in_order(self):
        with self.harness([{"events": [{"text": "one "}, {"text": "two "}, {"text": "three"}]}]) as harness:
            stream = harness.stream("count")
            events = list(stream)
            self.assertEqual(events[0]["type"], "turn/start")
            self.assertEqual(events[-1]["type"], "turn/end")
            self.assertGreaterEqual(sum(1 for e in events if e["type"] == "assistant/chunk"), 3)
            self.assertContiguous(events)
            self.assertEqual(stream.result.final_response, "one two three")
            self.assertEqual(harness.session.history(0)[events[0]["seq"]:], events)

    def test_cancel(self):
        with self.harness([{"events": [{"text": "partial "}, {"stall": True}]}]) as harness:
            stream = harness.stream("long task")
            for event in stream:
                if event["type"] == "assistant/chunk":
                    self.assertTrue(harness.cancel())
            self.assertEqual(stream.result.finish_reason, "cancelled")
            self.assertEqual(stream.result.events[-1]["data"]["reason"], "cancelled")

    def test_resume_in_a_new_process(self):
        with self.harness([{"text": "Noted: kiwi."}]) as first:
            session_id = first.run("remember the word kiwi").session_id
        with self.harness([{"text": "The word was kiwi."}]) as second:
            rows = [r for r in second.list_sessions() if r["sessionId"] == session_id]
            self.assertEqual(len(rows), 1)
            self.assertFalse(rows[0]["live"])
            session = second.resume_session(session_id)
            result = second.run("which word?")
            self.assertEqual(result.session_id, session_id)
            self.assertEqual(result.final_response, "The word was kiwi.")
            self.assertEqual(result.turn, 1)
            history = session.history()
            self.assertContiguous(history)
            self.assertEqual(sum(1 for e in history if e["type"] == "turn/end"), 2)

    def test_search_sessions(self):
        with self.harness([{"text": "Refactored."}]) as first:
            stored_id = first.run("please refactor the zebra-crossing module").session_id
        with self.harness([{"text": "Looking at the pelican-feeder."}]) as second:
            self.assertTrue(second.capabilities.get("search"))
            hits = second.search_sessions("zebra-crossing")
            self.assertEqual([h["sessionId"] for h in hits], [stored_id])
            self.assertFalse(hits[0]["live"])
            self.assertEqual(hits[0]["title"], "please refactor the zebra-crossing module")
            self.assertIn("[zebra-crossing]", hits[0]["snippet"])
            self.assertEqual(hits[0]["cwd"], self.dir)
            self.assertEqual([h["sessionId"] for h in second.search_sessions("zebra-crossing", cwd=self.dir, limit=5)], [stored_id])
            self.assertEqual(second.search_sessions("zebra-crossing", cwd=os.path.join(self.dir, "elsewhere")), [])
            # A running session of this process is searched too.
            live = second.new_session()
            live.run("check the pelican-feeder")
            live_hits = second.search_sessions("pelican-feeder")
            self.assertEqual([(h["sessionId"], h["live"]) for h in live_hits], [(live.id, True)])
            titles = {r["sessionId"]: r.get("title") for r in second.list_sessions()}
            self.assertEqual(titles[stored_id], "please refactor the zebra-crossing module")
            self.assertEqual(titles[live.id], "check the pelican-feeder")
            # Query text is a literal phrase, never syntax.
            self.assertEqual(second.search_sessions('"); DROP TABLE events; --'), [])
            self.assertEqual(second.search_sessions("zebra* OR NEAR(pelican"), [])
            self.assertEqual(len(second.search_sessions("zebra-crossing")), 1)
            with self.assertRaises(HarnessError) as short:
                second.search_sessions("ab")
            self.assertEqual(short.exception.code, "INVALID_PARAMS")
            for bad in (0, -1, "5", True):
                with self.assertRaises(HarnessError) as caught:
                    second.search_sessions("zebra", limit=bad)
                self.assertEqual(caught.exception.code, "INVALID_PARAMS")
            with self.assertRaises(HarnessError) as not_text:
                second.search_sessions(None)
            self.assertEqual(not_text.exception.code, "INVALID_PARAMS")

    def test_two_sessions_interleaved(self):
        steps = [
            {"events": [{"text": "alpha-"}, {"delayMs": 150}, {"text": "one"}]},
            {"events": [{"text": "beta-"}, {"delayMs": 150}, {"text": "two"}]},
        ]
        with self.harness(steps) as harness:
            a = harness.create_session()
            b = harness.create_session()
            order = []
            a.on_event(lambda e: order.append("a:" + e["type"]))
            b.on_event(lambda e: order.append("b:" + e["type"]))
            sa = a.stream("first")
            sb = b.stream("second")
            ra, rb = sa.wait(), sb.wait()
            self.assertEqual(sorted([ra.final_response, rb.final_response]), ["alpha-one", "beta-two"])
            self.assertContiguous(ra.events)
            self.assertContiguous(rb.events)
            self.assertLess(order.index("b:turn/start"), order.index("a:turn/end"))

    def test_errors_have_stable_codes(self):
        with self.harness([{"events": [{"text": "x"}, {"stall": True}]}]) as harness:
            stream = harness.stream("stall")
            with self.assertRaises(HarnessError) as busy:
                harness.stream("again")
            self.assertEqual(busy.exception.code, "BUSY")
            with self.assertRaises(HarnessError) as missing:
                harness.resume_session("no-such-session")
            self.assertEqual(missing.exception.code, "SESSION_NOT_FOUND")
            with self.assertRaises(HarnessError) as bad:
                harness.create_session(cwd=os.path.join(self.dir, "missing"))
            self.assertEqual(bad.exception.code, "INVALID_PARAMS")
            harness.cancel()
            self.assertEqual(stream.wait().finish_reason, "cancelled")

    def test_server_dying_mid_turn_raises(self):
        with self.harness([{"events": [{"text": "working..."}, {"stall": True}]}]) as harness:
            stream = harness.stream("do it")
            seen = []
            with self.assertRaises(HarnessError) as caught:
                for event in stream:
                    seen.append(event["type"])
                    if event["type"] == "assistant/chunk":
                        os.kill(harness.pid, signal.SIGKILL)
            self.assertIn("assistant/chunk", seen)
            self.assertEqual(caught.exception.code, "SERVER_EXITED")
            self.assertIn("signal 9", caught.exception.message)
            with self.assertRaises(HarnessError):
                harness.create_session()

    def test_close_leaves_no_process(self):
        harness = self.harness([])
        pid = harness.pid
        self.assertTrue(alive(pid))
        harness.close()
        self.assertFalse(alive(pid))
        self.assertEqual(harness._proc.returncode, 0)

    def test_bin_found_on_path(self):
        shim = os.path.join(self.dir, "bin")
        os.mkdir(shim)
        os.symlink(BIN, os.path.join(shim, "dsh-jsonrpc-agent"))
        old = os.environ["PATH"]
        os.environ["PATH"] = shim + os.pathsep + old
        try:
            with self.harness([{"text": "from PATH"}], bin=None) as harness:
                self.assertEqual(harness.run("hi").final_response, "from PATH")
        finally:
            os.environ["PATH"] = old


class FakeServerTest(unittest.TestCase):
    def test_malformed_frame_from_the_server(self):
        harness = Harness(bin=FAKE)
        try:
            with self.assertRaises(HarnessError) as caught:
                harness.create_session()
            self.assertEqual(caught.exception.code, "PROTOCOL_ERROR")
            self.assertIn("not JSON", caught.exception.message)
        finally:
            harness.close()
        self.assertFalse(alive(harness.pid))

    def test_protocol_version_mismatch(self):
        env = dict(os.environ, FAKE_VERSION="2")
        with self.assertRaises(HarnessError) as caught:
            Harness(bin=FAKE, env=env)
        self.assertEqual(caught.exception.code, "PROTOCOL_VERSION_MISMATCH")

    def test_missing_bin(self):
        with self.assertRaises(HarnessError) as caught:
            Harness(bin="/nonexistent/dsh-jsonrpc-agent")
        self.assertEqual(caught.exception.code, "SPAWN_FAILED")


if __name__ == "__main__":
    unittest.main()
