import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from anywhere

from dsh_sdk import protocol as p


class ProtocolTest(unittest.TestCase):
    def test_frames_are_single_lines(self):
        frame = p.encode_frame({"jsonrpc": "2.0", "method": "x", "params": {"text": "a\nb", "u": "é"}})
        self.assertTrue(frame.endswith(b"\n"))
        self.assertEqual(frame.count(b"\n"), 1)
        self.assertEqual(p.decode_frame(frame)["params"]["text"], "a\nb")

    def test_bad_frames_are_value_errors(self):
        for line, needle in ((b"{oops", "not JSON"), (b"[1]", "list"), (b'{"id":1}', "jsonrpc"), (b"\xff\n", "not JSON")):
            with self.assertRaises(ValueError) as caught:
                p.decode_frame(line)
            self.assertIn(needle, str(caught.exception))

    def test_error_codes(self):
        self.assertEqual(p.error_code({"code": -32011, "data": {"code": "BUSY"}}), "BUSY")
        self.assertEqual(p.error_code({"code": -32601}), "METHOD_NOT_FOUND")
        self.assertEqual(p.error_code({"code": 12345}), "INTERNAL")


if __name__ == "__main__":
    unittest.main()
