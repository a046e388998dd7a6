"""A minimal Language Server Protocol client for tests: starts `linnetc lsp`,
frames messages, collects notifications, times requests."""
import json
import os
import subprocess
import time


def uri(path):
    from urllib.parse import quote
    return "file://" + quote(os.path.abspath(path))


class Client:
    def __init__(self, linnetc, *args, env=None):
        self.proc = subprocess.Popen([linnetc, "lsp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.next_id = 1
        self.notifications = []
        self.latencies = []  # (method, seconds)

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("the server closed its output")
            line = line.strip()
            if not line:
                if length is not None:
                    break
                continue
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params, record=True):
        rid = self.next_id
        self.next_id += 1
        start = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == rid and "method" not in m:
                if record:
                    self.latencies.append((method, time.perf_counter() - start))
                return m
            self.notifications.append(m)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics_for(self, doc_uri):
        """The diagnostics last published for doc_uri by everything sent so far.

        A request's reply comes after every notification the server wrote
        before it, so a cheap request is the sync point."""
        self.request("textDocument/documentSymbol", {"textDocument": {"uri": doc_uri}}, record=False)
        latest = None
        for m in self.notifications:
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == doc_uri:
                latest = m["params"]["diagnostics"]
        if latest is None:
            raise AssertionError("no diagnostics were published for " + doc_uri)
        return latest

    def forget_notifications(self):
        self.notifications.clear()

    def close(self):
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        err = self.proc.stderr.read().decode(errors="replace")
        code = self.proc.wait(timeout=30)
        return code, out, err
