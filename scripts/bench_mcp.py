#!/usr/bin/env python3
"""Glovebox over MCP stdio, as a client sees it (issue 36), medians:
- `initialize` latency: from starting `glovebox mcp` to the answer of `initialize`;
- cold start to the first navigate: from starting it to the answer of the first `tab_open`;
- the same with a browser already running (`--browser-endpoint`): Glovebox's own share of it,
  without Chromium's start-up (~0.3 s on a 2-core machine before it answers at all);
- a click with its fresh observation: one `act` click (its result carries the observation).
Pages are served on 127.0.0.1; each start gets a fresh data directory.

Usage: scripts/bench_mcp.py [--glovebox PATH] [--starts N] [--clicks N]
"""
import argparse, http.server, json, os, re, shutil, subprocess, sys, tempfile, threading, time

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


def running_chromium():
    """A headless Chromium of its own, listening on a loopback port: (process, endpoint, profile)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="glovebox-bench-chromium-")
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "DevTools listening on " in line:
            ws = line.split("DevTools listening on ", 1)[1].strip()
            # Its stderr is drained from now on, so a chatty browser never blocks on the pipe.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, ws, profile
    raise RuntimeError("Chromium did not start")


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

    inits, firsts, warm = [], [], []
    for _ in range(args.starts):
        data = tempfile.mkdtemp(prefix="glovebox-bench-data-")
        env = dict(os.environ, GLOVEBOX_DATA_DIR=data)
        mcp = Mcp([args.glovebox, "mcp", "--trust", origin, "--config", config], env)
        inits.append(mcp.initialized * 1000)
        mcp.tool("tab_open", {"url": page})
        firsts.append((time.perf_counter() - mcp.started) * 1000)
        mcp.close()
        shutil.rmtree(data, ignore_errors=True)

    chromium, endpoint, profile = running_chromium()
    try:
        for _ in range(args.starts):
            data = tempfile.mkdtemp(prefix="glovebox-bench-data-")
            env = dict(os.environ, GLOVEBOX_DATA_DIR=data)
            mcp = Mcp([args.glovebox, "mcp", "--browser-endpoint", endpoint, "--trust", origin, "--config", config], env)
            mcp.tool("tab_open", {"url": page})
            warm.append((time.perf_counter() - mcp.started) * 1000)
            mcp.close()
            shutil.rmtree(data, ignore_errors=True)
    finally:
        chromium.kill()
        chromium.wait()
        shutil.rmtree(profile, ignore_errors=True)

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
    print(f"mcp cold start to the first navigate, browser already running  median {median(warm):8.1f} ms  (n={len(warm)})")
    print(f"mcp click with its fresh observation        median {median(clicks):8.1f} ms  (n={len(clicks)})")


if __name__ == "__main__":
    main()
