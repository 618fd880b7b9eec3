#!/usr/bin/env python3
"""Glovebox over MCP stdio, as a client sees it (issue 36), medians:
- `initialize` latency: from starting `glovebox mcp` to the answer of `initialize`;
- cold start to the first navigate: from starting it to the answer of the first `tab_open`;
- the same with a browser already running (`--browser-endpoint`): Glovebox's own share of it,
  without Chromium's start-up (~0.3 s on a 2-core machine before it answers at all);
- a click with its fresh observation: one `act` click (its result carries the observation);
- `tab_open` in a running session: a new tab (a window of its own, a renderer) at a loaded,
  observed page, and the CPU the whole machine spent per `tab_open` and its `tab_close` (all
  processes: Glovebox, Chromium's browser, renderers and GPU process; on a quiet machine that is
  the cost of a tab) — the figure that bounds `make fuzz`'s calls per second;
- the floor under the two start-up figures: the same CDP steps from a bare client with no
  Glovebox in between (launch over the DevTools pipe with Glovebox's flags, a browser context, a
  blank tab, attach, enable, navigate, the load event), cold and on a browser already running.
Pages are served on 127.0.0.1; each start gets a fresh data directory.

Usage: scripts/bench_mcp.py [--glovebox PATH] [--starts N] [--clicks N] [--opens N]
(`GLOVEBOX_CHROMIUM=/usr/lib/chromium/chromium-headless-shell` runs Glovebox on the headless shell;
the raw floor stays on `chromium`.)
"""
import argparse, http.server, json, os, re, shutil, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers  # noqa: E402  (its MCP client)

# Glovebox's launch flags (crates/cdp/src/launch.rs, BASE_FLAGS plus what a headless launch over
# the pipe adds), so the floor is measured on the browser Glovebox would start.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
    "--no-default-browser-check", "--disable-default-apps", "--disable-dev-shm-usage",
    "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-features=Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider,WebUIOmniboxPopup,WebUIOmniboxAimPopup",
    "--password-store=basic", "--use-mock-keychain", "--mute-audio",
    "--remote-debugging-pipe", "--window-size=1280,800", "--no-startup-window",
]

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


def machine_cpu_ms():
    """CPU time every process on the machine has used (user, nice, system, irq, softirq), ms."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) * 1000 / os.sysconf("SC_CLK_TCK")


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


class PipeCdp:
    """A bare CDP client over Chromium's DevTools pipe (NUL-separated JSON on its fds 3 and 4)."""

    def __init__(self, chromium, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():
            # Through fresh copies, in case either end already is fd 3 or 4; the copies on 3 and
            # 4 are inherited (dup2 clears close-on-exec), every other descriptor is not.
            reads, writes = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        self.proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0

    def message(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(line)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def call(self, method, params=None, session=None):
        wanted = self.send(method, params, session)
        while True:
            message = self.message()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def event(self, method, session):
        while True:
            message = self.message()
            if message.get("method") == method and message.get("sessionId") == session:
                return message

    def first_navigate(self, url):
        """A context, a blank tab in it, attached and enabled, navigated to `url`, until its load event."""
        context = self.call("Target.createBrowserContext", {"disposeOnDetach": True})["browserContextId"]
        target = self.call("Target.createTarget", {"url": "about:blank", "browserContextId": context,
                                                   "newWindow": True})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=session)
        self.call("Runtime.enable", session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.event("Page.loadEventFired", session)
        return context

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


def raw_floor(page, starts):
    """Medians, in ms, of the bare client's first navigate: (cold, on a browser already running)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    # The binary Glovebox launches: Debian's /usr/bin/chromium is a launcher script, passed by
    # (crates/cdp/src/launch.rs, `behind_launcher`).
    with open(os.path.realpath(chromium), "rb") as f:
        script = f.read(2) == b"#!"
    if script and os.path.realpath(chromium) == "/usr/bin/chromium" and os.access("/usr/lib/chromium/chromium", os.X_OK):
        chromium = "/usr/lib/chromium/chromium"
    cold, running = [], []
    for _ in range(starts):
        profile = tempfile.mkdtemp(prefix="glovebox-bench-raw-")
        started = time.perf_counter()
        cdp = PipeCdp(chromium, profile)
        try:
            cdp.call("Browser.getVersion")
            context = cdp.first_navigate(page)
            cold.append((time.perf_counter() - started) * 1000)
            cdp.call("Target.disposeBrowserContext", {"browserContextId": context})
            started = time.perf_counter()
            cdp.first_navigate(page)
            running.append((time.perf_counter() - started) * 1000)
        finally:
            cdp.close()
            shutil.rmtree(profile, ignore_errors=True)
    return median(cold), median(running)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glovebox", default=os.path.join(ROOT, "target/release/glovebox"))
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--clicks", type=int, default=50)
    parser.add_argument("--opens", type=int, default=20)
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
    opens, tab_cpu = [], []
    for i in range(args.opens + 2):
        cpu_before, started = machine_cpu_ms(), time.perf_counter()
        opened = mcp.tool("tab_open", {"url": page})
        took = (time.perf_counter() - started) * 1000
        mcp.tool("tab_close", {"surface": header(opened)["opened"]})
        if i >= 2:
            opens.append(took)
            tab_cpu.append(machine_cpu_ms() - cpu_before)
    mcp.close()
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(config_dir, ignore_errors=True)
    raw_cold, raw_running = raw_floor(page, args.starts)
    server.shutdown()
    print(f"mcp initialize (from process start)        median {median(inits):8.1f} ms  (n={len(inits)})")
    print(f"mcp cold start to the first navigate        median {median(firsts):8.1f} ms  (n={len(firsts)})")
    print(f"mcp cold start to the first navigate, browser already running  median {median(warm):8.1f} ms  (n={len(warm)})")
    print(f"mcp click with its fresh observation        median {median(clicks):8.1f} ms  (n={len(clicks)})")
    print(f"mcp tab_open in a running session           median {median(opens):8.1f} ms  (n={len(opens)})")
    print(f"machine CPU per tab_open and its tab_close  median {median(tab_cpu):8.1f} ms  (n={len(tab_cpu)})")
    print(f"raw CDP floor: cold start to the first navigate  median {raw_cold:8.1f} ms  (n={args.starts})")
    print(f"raw CDP floor: first navigate on a running browser  median {raw_running:8.1f} ms  (n={args.starts})")


if __name__ == "__main__":
    main()
