#!/usr/bin/env python3
"""Compare Glovebox with its peers on the same pages and the same Chromium:
- snapshot bytes against Playwright MCP's `browser_snapshot`, and whether every interactive element
  Playwright lists is in ours;
- the click round trip against Playwright MCP and agent-browser;
- end to end over stdio, "open fixture + observe + click + observe", Glovebox (`glovebox mcp`) vs
  Playwright MCP vs Chrome DevTools MCP (MCP servers driven by the same minimal JSON-RPC client) vs
  agent-browser (its CLI), as medians and ratios.
Installs the peers with npm under target/bench-node on first use. No internet beyond the npm
registry; pages are served on 127.0.0.1.

Usage: scripts/bench_peers.py [--glovebox PATH] [--chromium PATH]
"""
import argparse, http.server, json, os, re, shutil, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates/browser/tests/fixtures")
NODE_DIR = os.path.join(ROOT, "target/bench-node")
PW_VERSION = "0.0.83"
CDT_VERSION = "1.11.0"
E2E_ROUNDS = 20
INTERACTIVE = {"button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
               "menuitem", "tab", "switch", "slider", "spinbutton", "treeitem"}


def big_page():
    rows = "".join(f"<li><a href='/item/{i}'>Item {i}</a> <button>Buy {i}</button> <span>note {i}</span></li>" for i in range(1250))
    return f"<!doctype html><title>Big</title><h1>Big page</h1><ul>{rows}</ul>"


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=FIXTURES, **k)

    def do_GET(self):
        if self.path.startswith("/big"):
            body = big_page().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *a):
        pass


def npm_package(spec, entry):
    """The path of `entry` inside node_modules, installing `spec` under target/bench-node first."""
    path = os.path.join(NODE_DIR, "node_modules", entry)
    if not os.path.exists(path):
        os.makedirs(NODE_DIR, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", spec], cwd=NODE_DIR, check=True, stdout=subprocess.DEVNULL)
    return path


def ensure_playwright_mcp():
    return npm_package(f"@playwright/mcp@{PW_VERSION}", "@playwright/mcp/cli.js")


class Mcp:
    """A minimal MCP stdio client: newline-delimited JSON-RPC."""

    def __init__(self, argv, env=None):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
        # Seconds from starting the server to the answer of `initialize` (scripts/bench_mcp.py).
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
                raise RuntimeError("MCP server exited")
            msg = json.loads(line)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(msg["error"])
                return msg["result"]

    def tool(self, name, args):
        result = self.call("tools/call", {"name": name, "arguments": args})
        return "".join(c.get("text", "") for c in result.get("content", []))

    def close(self):
        # Closing stdin is how an MCP client ends a stdio session; terminate only a server that lingers.
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def playwright_snapshot(text):
    m = re.search(r"```yaml\n(.*?)```", text, re.S)
    return m.group(1) if m else text


def pw_interactive_names(snapshot):
    names = []
    for line in snapshot.splitlines():
        m = re.match(r"\s*- (\w+)(?: \"((?:[^\"\\]|\\.)*)\")?.*\[ref=", line)
        if not m:
            continue
        role, name = m.group(1), (m.group(2) or "")
        if role in INTERACTIVE or "[cursor=pointer]" in line:
            names.append((role, name))
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--glovebox", default=os.path.join(ROOT, "target/release/glovebox"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--e2e-only", action="store_true", help="only the end-to-end stdio comparison")
    parser.add_argument("--payloads-only", action="store_true", help="only the observation payload table")
    parser.add_argument("--dump", metavar="DIR", help="write each runtime's observation text under DIR")
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    if args.payloads_only:
        payloads(args, base)
        return 0
    if args.e2e_only:
        e2e(args, base)
        payloads(args, base)
        return 0
    cli = ensure_playwright_mcp()
    pw = Mcp(["node", cli, "--headless", "--isolated", "--no-sandbox", "--executable-path", args.chromium])

    pages = ["/login.html", "/clickables.html", "/paragraph.html", "/tree.html", "/table.html", "/secrets.html", "/article.html", "/store.html", "/big"]
    print(f"{'page':<18} {'glovebox B':>10} {'playwright B':>12} {'ratio':>6} {'pw interactive':>14} {'missing in ours':>15}")
    ratios = []
    for page in pages:
        url = base + page
        ours = json.loads(subprocess.run([args.glovebox, "observe", url, "--json"], check=True, capture_output=True, text=True).stdout)
        our_text = ours["aria_snapshot"]
        our_names = {e["name"] for e in ours["interactive_elements"]} | set(re.findall(r'"((?:[^"\\]|\\.)*)" \[e\d+[ \]]', our_text))
        pw.tool("browser_navigate", {"url": url})
        snap = playwright_snapshot(pw.tool("browser_snapshot", {}))
        wanted = pw_interactive_names(snap)
        missing = [n for n in wanted if n[1] and n[1] not in our_names]
        ratio = len(our_text.encode()) / max(1, len(snap.encode()))
        ratios.append(ratio)
        print(f"{page:<18} {len(our_text.encode()):>10} {len(snap.encode()):>12} {ratio:>6.2f} {len(wanted):>14} {len(missing):>15}")
        for m in missing[:5]:
            print(f"    missing: {m}")
    ratios.sort()
    print(f"median bytes ratio glovebox/playwright: {ratios[len(ratios) // 2]:.2f}")

    # Click round trip: click a button and get a fresh observation of the page, 20 times each.
    print()
    ours = json.loads(subprocess.run([args.glovebox, "bench", "act", "--json"], check=True, capture_output=True, text=True).stdout)
    our_click = ours["click + settle + fresh observation"]["median_ms"]
    url = base + "/counter.html"
    pw.tool("browser_navigate", {"url": url})
    snap = playwright_snapshot(pw.tool("browser_snapshot", {}))
    ref = re.search(r'button "Add one" \[ref=([^\]]+)\]', snap).group(1)
    times = []
    for _ in range(23):
        t = time.perf_counter()
        pw.tool("browser_click", {"element": "Add one", "target": ref})
        times.append((time.perf_counter() - t) * 1000)
    pw_click = sorted(times[3:])[len(times[3:]) // 2]
    pw.close()
    print(f"{'click round trip (median ms)':<36} glovebox {our_click:8.1f}   playwright-mcp {pw_click:8.1f}   ratio {pw_click / our_click:5.2f}x")

    ab = agent_browser_click(url, args.chromium)
    if ab is not None:
        print(f"{'click round trip (median ms)':<36} glovebox {our_click:8.1f}   agent-browser  {ab:8.1f}   ratio {ab / our_click:5.2f}x")

    e2e(args, base)
    payloads(args, base)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def e2e_glovebox(glovebox, url, origin, button, check):
    # The per-session bound on tool calls (300 a minute by default) is lifted for the benchmark.
    config = os.path.join(ROOT, "target/bench-node/glovebox-bench.toml")
    with open(config, "w") as f:
        f.write("[serve]\ncalls_per_minute = 1000000\n")
    mcp = Mcp([glovebox, "mcp", "--trust", origin, "--config", config])
    payload = []

    header = lambda result: json.loads(result["content"][0]["text"])
    text = lambda result: "".join(c.get("text", "") for c in result["content"])

    # One tab held by the session, navigated each round, as the peers navigate theirs.
    opened = mcp.call("tools/call", {"name": "tab_open", "arguments": {"url": "about:blank"}})
    assert not opened.get("isError"), opened
    frame = [header(mcp.call("tools/call", {"name": "observe", "arguments": {}}))["frame_id"]]

    def act(action):
        action = dict(action, expected_frame_id=frame[0], intent="bench")
        acted = mcp.call("tools/call", {"name": "act", "arguments": {"action": action}})
        assert not acted.get("isError"), acted
        frame[0] = header(acted)["frame_id"]

    def one_round():
        act({"type": "navigate", "url": url})
        observed = mcp.call("tools/call", {"name": "observe", "arguments": {}})
        frame[0] = header(observed)["frame_id"]
        ref = re.search(rf'button "{button}" \[(e\d+)[ \]]', text(observed)).group(1)
        act({"type": "click", "target": {"kind": "element", "ref": ref}})
        observed = mcp.call("tools/call", {"name": "observe", "arguments": {}})
        frame[0] = header(observed)["frame_id"]
        assert check in text(observed), text(observed)
        payload.append(len(text(observed).encode()))

    return one_round, payload, mcp.close


def e2e_playwright(cli, chromium, url, button, check):
    mcp = Mcp(["node", cli, "--headless", "--isolated", "--no-sandbox", "--executable-path", chromium])
    payload = []

    def one_round():
        mcp.tool("browser_navigate", {"url": url})
        snap = mcp.tool("browser_snapshot", {})
        ref = re.search(rf'button "{button}" \[ref=([^\]]+)\]', snap).group(1)
        mcp.tool("browser_click", {"element": button, "target": ref})
        after = mcp.tool("browser_snapshot", {})
        assert check in after, after
        payload.append(len(after.encode()))

    return one_round, payload, mcp.close


def ensure_chrome_devtools_mcp():
    return npm_package(f"chrome-devtools-mcp@{CDT_VERSION}", "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js")


def e2e_chrome_devtools(chromium, url, button, check):
    cli = ensure_chrome_devtools_mcp()
    mcp = Mcp(["node", cli, "--headless", "--isolated", "--executablePath", chromium, "--chromeArg=--no-sandbox",
               "--chromeArg=--disable-gpu", "--usageStatistics=false"])
    payload = []

    def one_round():
        pages = mcp.tool("new_page", {"url": url})
        page = int(re.findall(r"^(\d+): .*\[selected\]", pages, re.M)[-1])
        snap = mcp.tool("take_snapshot", {"pageId": page})
        uid = re.search(rf'uid=(\S+) button "{button}"', snap).group(1)
        mcp.tool("click", {"pageId": page, "uid": uid})
        after = mcp.tool("take_snapshot", {"pageId": page})
        assert check in after, after
        payload.append(len(after.encode()))
        mcp.tool("close_page", {"pageId": page})

    return one_round, payload, mcp.close


def e2e_agent_browser(chromium, url, button, check):
    exe, run = agent_browser(chromium)
    payload = []

    def one_round():
        run("open", url)
        snap = run("snapshot").stdout
        ref = re.search(rf'button "{button}" \[ref=(e\d+)\]', snap).group(1)
        run("click", "@" + ref)
        after = run("snapshot").stdout
        assert check in after, after
        payload.append(len(after.encode()))

    return one_round, payload, lambda: run("close", "--all")


# Each scenario: the fixture, the button to click (the first of that name), and the text that shows
# the click took effect. The counter is the smallest page there is; the store a realistic one.
E2E_SCENARIOS = [("/counter.html", "Add one", "1 clicks"), ("/store.html", "Add to cart", "Cart (1)")]


def e2e(args, base):
    for path, button, check in E2E_SCENARIOS:
        e2e_one(args, base, path, button, check)


def e2e_one(args, base, path, button, check):
    """End to end over stdio: open the fixture, observe, click the button, observe. Every peer is
    started first, then the rounds alternate between peers, so a noisy machine's drift hits all
    of them alike."""
    url = base + path
    print()
    print(f"end to end over stdio on {path}: open + observe + click + observe ({E2E_ROUNDS} rounds each, alternating, medians)")
    starts = [
        ("glovebox", lambda: e2e_glovebox(args.glovebox, url, base, button, check)),
        ("playwright-mcp", lambda: e2e_playwright(ensure_playwright_mcp(), args.chromium, url, button, check)),
        ("chrome-devtools-mcp", lambda: e2e_chrome_devtools(args.chromium, url, button, check)),
        ("agent-browser", lambda: e2e_agent_browser(args.chromium, url, button, check)),
    ]
    peers = {}
    for name, start in starts:
        try:
            peers[name] = start()
        except Exception as e:  # a peer that cannot start here is reported, not fatal
            print(f"  {name}: skipped ({type(e).__name__}: {str(e)[:200]})")
    times = {name: [] for name in peers}
    failed = set()
    for i in range(E2E_ROUNDS + 2):
        for name, (one_round, _, _) in peers.items():
            if name in failed:
                continue
            t = time.perf_counter()
            try:
                one_round()
            except Exception as e:
                print(f"  {name}: failed ({type(e).__name__}: {str(e)[:200]})")
                failed.add(name)
                continue
            if i >= 2:
                times[name].append((time.perf_counter() - t) * 1000)
    for name, (_, _, close) in peers.items():
        try:
            close()
        except Exception:
            pass
    results = {name: (median(times[name]), median(peers[name][1])) for name in peers if name not in failed}
    ours = results.get("glovebox")
    for name, (ms, size) in results.items():
        ratio = f"   {ms / ours[0]:5.2f}x our time   {size / ours[1]:5.2f}x our last-observation bytes" if ours and name != "glovebox" else ""
        print(f"  {name:<20} {ms:8.1f} ms   last observation {size:6d} B{ratio}")


def payloads(args, base):
    """What each runtime hands the model for one observation of the same fixtures: every byte of
    the tool's text output (Glovebox: trusted header, untrusted markers, url, title, snapshot)."""
    pages = ["/counter.html", "/login.html", "/table.html", "/secrets.html", "/tree.html", "/article.html", "/store.html", "/big"]
    config = os.path.join(ROOT, "target/bench-node/glovebox-bench.toml")
    gb = Mcp([args.glovebox, "mcp", "--trust", base, "--config", config])
    gb.call("tools/call", {"name": "tab_open", "arguments": {"url": "about:blank"}})
    pw = Mcp(["node", ensure_playwright_mcp(), "--headless", "--isolated", "--no-sandbox", "--executable-path", args.chromium])
    cdt = Mcp(["node", ensure_chrome_devtools_mcp(), "--headless", "--isolated", "--executablePath", args.chromium,
               "--chromeArg=--no-sandbox", "--chromeArg=--disable-gpu", "--usageStatistics=false"])
    _, ab = agent_browser(args.chromium)
    print()
    print("observation payload, bytes of the tool's whole text output")
    print(f"{'page':<16} {'glovebox':>9} {'playwright':>11} {'devtools':>9} {'agent-br':>9}   smallest")
    try:
        for page in pages:
            url = base + page
            text = lambda r: "".join(c.get("text", "") for c in r["content"])
            frame = json.loads(gb.call("tools/call", {"name": "observe", "arguments": {}})["content"][0]["text"])["frame_id"]
            gb.call("tools/call", {"name": "act", "arguments": {"action": {"type": "navigate", "url": url, "expected_frame_id": frame, "intent": "bench"}}})
            outputs = {"glovebox": text(gb.call("tools/call", {"name": "observe", "arguments": {}}))}
            pw.tool("browser_navigate", {"url": url})
            outputs["playwright"] = pw.tool("browser_snapshot", {})
            listed = cdt.tool("new_page", {"url": url})
            page_id = int(re.findall(r"^(\d+): .*\[selected\]", listed, re.M)[-1])
            outputs["devtools"] = cdt.tool("take_snapshot", {"pageId": page_id})
            cdt.tool("close_page", {"pageId": page_id})
            ab("open", url)
            outputs["agent-browser"] = ab("snapshot").stdout
            if args.dump:
                os.makedirs(args.dump, exist_ok=True)
                for who, out in outputs.items():
                    with open(os.path.join(args.dump, f"{page.strip('/').replace('.html', '')}.{who}.txt"), "w") as f:
                        f.write(out)
            ours, theirs_pw, theirs_cdt, theirs_ab = (len(outputs[k].encode()) for k in ("glovebox", "playwright", "devtools", "agent-browser"))
            sizes = {"glovebox": ours, "playwright": theirs_pw, "devtools": theirs_cdt, "agent-browser": theirs_ab}
            print(f"{page:<16} {ours:>9} {theirs_pw:>11} {theirs_cdt:>9} {theirs_ab:>9}   {min(sizes, key=sizes.get)}")
    finally:
        for m in (gb, pw, cdt):
            m.close()
        ab("close", "--all")


def agent_browser(chromium):
    exe = npm_package("agent-browser@0.41.2", "agent-browser/bin/agent-browser-linux-x64")
    os.chmod(exe, 0o755)
    env = dict(os.environ, AGENT_BROWSER_EXECUTABLE_PATH=chromium, AGENT_BROWSER_ARGS="--no-sandbox,--disable-gpu",
               AGENT_BROWSER_SESSION="glovebox-bench")
    return exe, (lambda *a: subprocess.run([exe, *a], env=env, capture_output=True, text=True, timeout=60))


def agent_browser_click(url, chromium):
    """agent-browser (npm): `click @ref` then `snapshot`, the same round trip through its CLI."""
    _, run = agent_browser(chromium)
    try:
        run("open", url)
        snap = run("snapshot").stdout
        m = re.search(r'button "Add one" \[ref=(e\d+)\]', snap)
        if not m:
            print("agent-browser: no ref for the button in its snapshot; skipped")
            return None
        times = []
        for _ in range(13):
            t = time.perf_counter()
            run("click", "@" + m.group(1))
            run("snapshot")
            times.append((time.perf_counter() - t) * 1000)
        return sorted(times[3:])[len(times[3:]) // 2]
    finally:
        run("close", "--all")


if __name__ == "__main__":
    sys.exit(main())
