#!/usr/bin/env python3
"""Compare Glovebox's observation with Playwright MCP's `browser_snapshot` on the same pages and
the same Chromium: snapshot bytes, and whether every interactive element Playwright lists is in
ours. Installs @playwright/mcp with npm under target/bench-node on first use. No internet beyond
the npm registry; pages are served on 127.0.0.1.

Usage: scripts/bench_peers.py [--glovebox PATH] [--chromium PATH]
"""
import argparse, http.server, json, os, re, shutil, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates/browser/tests/fixtures")
NODE_DIR = os.path.join(ROOT, "target/bench-node")
PW_VERSION = "0.0.83"
INTERACTIVE = {"button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
               "menuitem", "tab", "switch", "slider", "spinbutton", "treeitem"}


def big_page():
    rows = "".join(f"<li><a href='/item/{i}'>Item {i}</a> <button>Buy {i}</button> <span>note {i}</span></li>" for i in range(1000))
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


def ensure_playwright_mcp():
    cli = os.path.join(NODE_DIR, "node_modules/@playwright/mcp/cli.js")
    if not os.path.exists(cli):
        os.makedirs(NODE_DIR, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", f"@playwright/mcp@{PW_VERSION}"], cwd=NODE_DIR, check=True,
                       stdout=subprocess.DEVNULL)
    return cli


class Mcp:
    """A minimal MCP stdio client: newline-delimited JSON-RPC."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}})
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
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    cli = ensure_playwright_mcp()
    pw = Mcp(["node", cli, "--headless", "--isolated", "--no-sandbox", "--executable-path", args.chromium])

    pages = ["/login.html", "/clickables.html", "/paragraph.html", "/tree.html", "/table.html", "/secrets.html", "/big"]
    print(f"{'page':<18} {'glovebox B':>10} {'playwright B':>12} {'ratio':>6} {'pw interactive':>14} {'missing in ours':>15}")
    ratios = []
    for page in pages:
        url = base + page
        ours = json.loads(subprocess.run([args.glovebox, "observe", url, "--json"], check=True, capture_output=True, text=True).stdout)
        our_text = ours["aria_snapshot"]
        our_names = {e["name"] for e in ours["interactive_elements"]} | set(re.findall(r'"((?:[^"\\]|\\.)*)" \[ref=', our_text))
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


def agent_browser_click(url, chromium):
    """agent-browser (npm): `click @ref` then `snapshot`, the same round trip through its CLI."""
    exe = os.path.join(NODE_DIR, "node_modules/agent-browser/bin/agent-browser-linux-x64")
    if not os.path.exists(exe):
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "agent-browser@0.41.2"], cwd=NODE_DIR, check=True, stdout=subprocess.DEVNULL)
    os.chmod(exe, 0o755)
    env = dict(os.environ, AGENT_BROWSER_EXECUTABLE_PATH=chromium, AGENT_BROWSER_ARGS="--no-sandbox,--disable-gpu",
               AGENT_BROWSER_SESSION="glovebox-bench")
    run = lambda *a: subprocess.run([exe, *a], env=env, capture_output=True, text=True, timeout=60)
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
