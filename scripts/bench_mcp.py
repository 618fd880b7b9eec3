#!/usr/bin/env python3
"""Glovebox over MCP stdio, as a client sees it (issue 36), medians:
- `initialize` latency: from starting `glovebox mcp` to the answer of `initialize`;
- cold start to the first navigate: from starting it to the answer of the first `tab_open`;
- a click with its fresh observation: one `act` click (its result carries the observation).
Pages are served on 127.0.0.1; each start gets a fresh data directory.

Usage: scripts/bench_mcp.py [--glovebox PATH] [--starts N] [--clicks N]
"""
import argparse, http.server, json, os, re, shutil, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers  # noqa: E402  (its MCP client)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates/browser/tests/fixtures")


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=FIXTURES, **k)

    def log_message(self, *a):
        pass


class Mcp(bench_peers.Mcp):
    """bench_peers' minimal stdio client, with a tool call that fails on a tool error."""

    def tool(self, name, args):
        result = self.call("tools/call", {"name": name, "arguments": args})
        if result.get("isError"):
            raise RuntimeError(result)
        return result


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
