#!/usr/bin/env python3
"""Glovebox over MCP stdio, as a client sees it (issue 36), medians:
- `initialize` latency: from starting `glovebox mcp` to the answer of `initialize`;
- cold start to the first navigate: from starting it to the answer of the first `tab_open`;
- a click with its fresh observation: one `act` click (its result carries the observation).
Pages are served on 127.0.0.1; each start gets a fresh data directory.

Usage: scripts/bench_mcp.py [--glovebox PATH] [--starts N] [--clicks N]
"""
import argparse, http.server, json, os, re, shutil, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates/browser/tests/fixtures")


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=FIXTURES, **k)

    def log_message(self, *a):
        pass


class Mcp:
    """A minimal MCP stdio client: newline-delimited JSON-RPC."""

    def __init__(self, argv, env):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
        self.initialized = time.perf_counter() - self.started
        self.notify("notifications/initialized", {})

    def notify(self, method, params):
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()

    def call(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("glovebox mcp exited")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg["result"]

    def tool(self, name, args):
        result = self.call("tools/call", {"name": name, "arguments": args})
        if result.get("isError"):
            raise RuntimeError(result)
        return result

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glovebox", default=os.path.join(ROOT, "target/release/glovebox"))
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--clicks", type=int, default=50)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    page = origin + "/counter.html"
    config_dir = tempfile.mkdtemp(prefix="glovebox-bench-mcp-")
    config = os.path.join(config_dir, "bench.toml")
    with open(config, "w") as f:
        f.write("[serve]\ncalls_per_minute = 1000000\n")
    header = lambda result: json.loads(result["content"][0]["text"])
    text = lambda result: "".join(c.get("text", "") for c in result["content"])

    inits, firsts = [], []
    for _ in range(args.starts):
        data = tempfile.mkdtemp(prefix="glovebox-bench-data-")
        env = dict(os.environ, GLOVEBOX_DATA_DIR=data)
        mcp = Mcp([args.glovebox, "mcp", "--trust", origin, "--config", config], env)
        inits.append(mcp.initialized * 1000)
        mcp.tool("tab_open", {"url": page})
        firsts.append((time.perf_counter() - mcp.started) * 1000)
        mcp.close()
        shutil.rmtree(data, ignore_errors=True)

    data = tempfile.mkdtemp(prefix="glovebox-bench-data-")
    mcp = Mcp([args.glovebox, "mcp", "--trust", origin, "--config", config], dict(os.environ, GLOVEBOX_DATA_DIR=data))
    mcp.tool("tab_open", {"url": page})
    observed = mcp.tool("observe", {})
    frame = header(observed)["frame_id"]
    ref = re.search(r'button "[^"]*" \[(e\d+)[ \]]', text(observed)).group(1)
    clicks = []
    for i in range(args.clicks + 3):
        started = time.perf_counter()
        acted = mcp.tool("act", {"action": {"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref}, "intent": "bench"}})
        took = (time.perf_counter() - started) * 1000
        frame = header(acted)["frame_id"]
        if i >= 3:
            clicks.append(took)
    mcp.close()
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(config_dir, ignore_errors=True)
    server.shutdown()
    print(f"mcp initialize (from process start)        median {median(inits):8.1f} ms  (n={len(inits)})")
    print(f"mcp cold start to the first navigate        median {median(firsts):8.1f} ms  (n={len(firsts)})")
    print(f"mcp click with its fresh observation        median {median(clicks):8.1f} ms  (n={len(clicks)})")


if __name__ == "__main__":
    main()
