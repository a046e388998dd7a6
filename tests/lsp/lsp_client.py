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

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        start = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == rid and "method" not in m:
                self.latencies.append((method, time.perf_counter() - start))
                return m
            self.notifications.append(m)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics_for(self, doc_uri, timeout=10.0):
        """The next publishDiagnostics for doc_uri (reading until it comes)."""
        deadline = time.time() + timeout
        while True:
            for i, m in enumerate(self.notifications):
                if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == doc_uri:
                    del self.notifications[i]
                    return m["params"]["diagnostics"]
            if time.time() > deadline:
                raise TimeoutError("no diagnostics for " + doc_uri)
            self.notifications.append(self.read())

    def close(self):
        self.proc.stdin.close()
        out = self.proc.stdout.read()
        err = self.proc.stderr.read().decode(errors="replace")
        code = self.proc.wait(timeout=30)
        return code, out, err
