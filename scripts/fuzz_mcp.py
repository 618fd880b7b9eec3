#!/usr/bin/env python3
"""A seeded MCP fuzzer for Glovebox (issue 35): `make fuzz SECONDS=… SEED=…`, never part of
`make test`.

It starts one `glovebox serve` (HTTP, no token, loopback) and one `glovebox mcp` (stdio) on a
fresh data directory, serves a few fixture pages on 127.0.0.1, and for SECONDS sends seeded
messages from four sessions at once (three over HTTP, one over stdio): well-formed tool calls
(open, observe, act on refs the last observation gave, status, tabs, cleanup) mixed with
mutations of them (wrong types, unknown fields, odd ids, params that are not objects, cut and
garbled bytes). Every request with an id must be answered with that id; one unanswered after
10 s is a stall. A server process that exits, or prints `panicked`, is a crash. It prints one
JSON line: calls, answered, unanswered, stalls, crashes, p50/p99 latency, and what each server
held (its RSS and open files, its Chromium's processes and their summed RSS; first sample, last,
peak, one a minute); exit 1 on any stall or crash. Ctrl-C or SIGTERM ends a run early: the
servers are stopped and the line reports what ran until then (`"interrupted": true`, exit 130
when nothing failed). Standard library only."""

import http.client
import http.server
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "glovebox")
STALL_S = 10.0

PAGES = {
    "/form.html": "<!doctype html><title>Form</title><label>Name <input name=n></label><button>Save</button><a href='/list.html'>List</a>",
    "/list.html": "<!doctype html><title>List</title><ul><li><a href='/form.html'>Back</a></li><li><button onclick=\"window.open('/form.html')\">Pop</button></li></ul><select><option>a</option><option>b</option></select>",
    "/busy.html": "<!doctype html><title>Busy</title><div id=d></div><script>setInterval(()=>{d.textContent=Date.now()},50)</script><input aria-label=Note>",
}


class Pages(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGES.get(self.path.split("?")[0], "<!doctype html><title>404</title>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = 0
        self.answered = 0
        self.unanswered = 0
        self.stalls = []
        self.latencies = []
        self.by_kind = {}

    def sent(self):
        with self.lock:
            self.calls += 1

    def got(self, seconds, kind="?"):
        with self.lock:
            self.answered += 1
            self.latencies.append(seconds)
            n, total = self.by_kind.get(kind, (0, 0.0))
            self.by_kind[kind] = (n + 1, total + seconds)

    def missed(self, what):
        with self.lock:
            self.unanswered += 1
            self.stalls.append(what)


def tree_of(root):
    """What a server process holds: its own RSS and open files, and how many processes (its
    Chromium's) run under it and their RSS, read from /proc. None once it is gone."""
    parents, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    if root not in parents:
        return None
    children, below = {}, []
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        below.append(pid)
        stack.extend(children.get(pid, []))
    try:
        fds = len(os.listdir("/proc/%d/fd" % root))
    except OSError:
        fds = -1
    mb = lambda b: round(b / 2**20)
    return {"rss_mb": mb(rss[root]), "fds": fds, "procs": len(below), "procs_rss_mb": mb(sum(rss.get(p, 0) for p in below))}


class Resources:
    """A sample of each server's process tree a minute, so a long run shows what grows: the
    report gives each figure's first sample, last sample and peak."""

    def __init__(self):
        self.pids = {}
        self.samples = {}

    def sample(self):
        line = []
        for name, pid in sorted(self.pids.items()):
            now = tree_of(pid)
            if now is None:
                continue
            self.samples.setdefault(name, []).append(now)
            line.append("%s %d MB, %d fds, %d procs %d MB" % (name, now["rss_mb"], now["fds"], now["procs"], now["procs_rss_mb"]))
        return "; ".join(line)

    def report(self):
        out = {}
        for name, samples in self.samples.items():
            out[name] = {k: {"first": samples[0][k], "last": samples[-1][k], "peak": max(x[k] for x in samples)} for k in samples[0]}
        return out


def messages(rng, base, state):
    """The next message: (dict or bytes, expects an answer with this id or None)."""
    state["id"] += 1
    i = state["id"]
    url = base + rng.choice(list(PAGES))
    frame = state.get("frame") or "frame_0"
    refs = state.get("refs") or ["e1"]
    call = rng.choice([
        ("tab_open", {"url": url}),
        ("observe", {}),
        ("observe", {"screenshot": rng.random() < 0.2}),
        ("surfaces", {}),
        ("tabs", {}),
        ("status", {}),
        ("act", {"action": {"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": rng.choice(refs)}, "intent": "fuzz"}}),
        ("act", {"action": {"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": rng.choice(refs)}, "text": "fuzz" * rng.randint(0, 3), "intent": "fuzz"}}),
        ("act", {"action": {"type": "scroll", "expected_frame_id": frame, "delta_y": rng.randint(-900, 900), "intent": "fuzz"}}),
        ("act", {"action": {"type": "press", "expected_frame_id": frame, "target": {"kind": "element", "ref": rng.choice(refs)}, "key": rng.choice(["Enter", "Tab", "Return", "Control+A", "Hyper+Q"]), "intent": "fuzz"}}),
        ("act", {"action": {"type": "navigate", "expected_frame_id": frame, "url": rng.choice([url, "javascript:alert(1)", "file:///etc/passwd", "http://[::1"]), "intent": "fuzz"}}),
        ("tab_close", {"surface": rng.choice(["s1", "s2", "s3", "web:1", "nope"])}),
        ("cleanup", {}),
    ])
    message = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": call[0], "arguments": call[1]}}
    expects = i
    roll = rng.random()
    if roll < 0.08:
        message["params"]["arguments"]["unknown_field"] = True
    elif roll < 0.14:
        message["params"] = rng.choice([[1], "x", 5, None, {"name": 3}, {"name": call[0], "_meta": 5}])
    elif roll < 0.18:
        message["id"] = rng.choice([None, 18446744073709551615, -1, "s-%d" % i, 1.5, [i]])
        expects = message["id"] if isinstance(message["id"], (str, int)) and not isinstance(message["id"], bool) else "any"
        if message["id"] is None:
            expects = "any"
    elif roll < 0.22:
        raw = json.dumps(message).encode()
        cut = rng.randint(1, len(raw) - 1)
        return raw[:cut] + rng.choice([b"", b"\xff\xfe", b"}}}", b"\x00"]), "null"
    elif roll < 0.25:
        message = {"jsonrpc": "2.0", "id": i, "method": rng.choice(["ping", "tools/list", "no/such", "resources/list"]), "params": rng.choice([{}, {"_meta": {}}, {"_meta": []}])}
    return message, expects


def kind_of(message):
    """What a message asks, for the time-by-kind report: a tool (and act type), a method, or `bytes`."""
    if isinstance(message, bytes):
        return "bytes"
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict) or not isinstance(params.get("arguments"), dict):
        return str(message.get("method"))
    action = params["arguments"].get("action")
    return str(params.get("name")) + (":" + str(action.get("type")) if isinstance(action, dict) else "")


def remember(state, reply):
    """Keeps the frame and refs of an observation, so acts name real ones."""
    try:
        for content in reply.get("result", {}).get("content", []):
            text = content.get("text", "")
            m = re.search(r'"frame_id":\s*"(frame_[0-9a-f]+)"', text) or re.search(r"frame_id: (frame_[0-9a-f]+)", text)
            if m:
                state["frame"] = m.group(1)
            refs = re.findall(r"\[(e\d+)", text)
            if refs:
                state["refs"] = refs[:20]
    except AttributeError:
        pass


def http_session(port, base, seed, deadline, stats):
    rng = random.Random(seed)
    state = {"id": 0}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(body):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=STALL_S + 5)
        conn.request("POST", "/mcp", body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read().decode("utf-8", "replace")
        sid = response.getheader("mcp-session-id")
        conn.close()
        replies = []
        for line in raw.splitlines():
            if line.startswith("data:"):
                try:
                    replies.append(json.loads(line[5:]))
                except ValueError:
                    pass
        if not replies and raw.strip().startswith("{"):
            try:
                replies.append(json.loads(raw))
            except ValueError:
                pass
        return response.status, sid, replies

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz-%d" % seed, "version": "0"}}}
    _, sid, _ = post(json.dumps(init).encode())
    headers["Mcp-Session-Id"] = sid
    post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    while time.time() < deadline:
        message, expects = messages(rng, base, state)
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        stats.sent()
        started = time.time()
        try:
            status, _, replies = post(body)
        except (OSError, http.client.HTTPException) as e:
            stats.missed("http %s: %s" % (type(e).__name__, body[:120]))
            continue
        took = time.time() - started
        if status == 404:
            # The session ended (a cleanup does not end it; anything else is a finding).
            stats.missed("http: the session is gone (404)")
            return
        answer = next((r for r in replies if "id" in r), None)
        if answer is None and status not in (202,):
            stats.missed("http status %d, no answer: %s" % (status, body[:120]))
        elif answer is not None and expects not in ("any", "null") and answer.get("id") != expects:
            stats.missed("http answer id %r for %r" % (answer.get("id"), expects))
        else:
            stats.got(took, kind_of(message))
            if answer is not None:
                remember(state, answer)
        if took > STALL_S:
            stats.stalls.append("http %.1f s: %s" % (took, body[:120]))


def stdio_session(binary, data_dir, base, seed, deadline, stats, crashes, resources):
    rng = random.Random(seed)
    state = {"id": 0}
    proc = subprocess.Popen([binary, "--data-dir", data_dir, "--trust", base, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    resources.pids["stdio"] = proc.pid
    answers = queue.Queue()
    stderr_lines = []

    def read_out():
        for line in proc.stdout:
            try:
                answers.put(json.loads(line))
            except ValueError:
                answers.put({"unreadable": line[:200].decode("utf-8", "replace")})

    def read_err():
        for line in proc.stderr:
            stderr_lines.append(line.decode("utf-8", "replace"))

    threading.Thread(target=read_out, daemon=True).start()
    threading.Thread(target=read_err, daemon=True).start()

    def send(body):
        proc.stdin.write(body + b"\n")
        proc.stdin.flush()

    send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz-stdio", "version": "0"}}}).encode())
    answers.get(timeout=30)
    send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    while time.time() < deadline and proc.poll() is None:
        message, expects = messages(rng, base, state)
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        stats.sent()
        started = time.time()
        try:
            send(body)
            answer = answers.get(timeout=STALL_S)
        except queue.Empty:
            stats.missed("stdio: no answer in %.0f s: %s" % (STALL_S, body[:120]))
            continue
        except OSError as e:
            stats.missed("stdio: %s" % e)
            break
        if expects not in ("any", "null") and answer.get("id") != expects:
            stats.missed("stdio answer id %r for %r" % (answer.get("id"), expects))
        else:
            stats.got(time.time() - started, kind_of(message))
            remember(state, answer)
    if proc.poll() is not None:
        crashes.append("glovebox mcp exited with %s: %s" % (proc.returncode, "".join(stderr_lines[-5:])))
    proc.stdin.close()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    crashes.extend("stdio stderr: " + l for l in stderr_lines if "panicked" in l)


def main():
    seconds = float(os.environ.get("SECONDS_TO_RUN") or (sys.argv[1] if len(sys.argv) > 1 else 60))
    seed = int(os.environ.get("SEED") or (sys.argv[2] if len(sys.argv) > 2 else 1))
    sessions = max(2, int(os.environ.get("SESSIONS") or 4))
    data = os.path.join(ROOT, "target", "fuzz")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % pages.server_address[1]
    port = free_port()
    serve = subprocess.Popen([BINARY, "--data-dir", os.path.join(data, "serve"), "--trust", base, "serve", "--bind", "127.0.0.1:%d" % port, "--no-token"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    serve_err = []
    threading.Thread(target=lambda: [serve_err.append(l.decode("utf-8", "replace")) for l in serve.stderr], daemon=True).start()
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    stats, crashes, resources = Stats(), [], Resources()
    resources.pids["serve"] = serve.pid
    deadline = time.time() + seconds
    workers = [threading.Thread(target=http_session, args=(port, base, seed * 10 + k, deadline, stats)) for k in range(sessions - 1)]
    workers.append(threading.Thread(target=stdio_session, args=(BINARY, os.path.join(data, "stdio"), base, seed * 10 + 9, deadline, stats, crashes, resources)))
    for w in workers:
        # Daemons: an interrupted run ends with its report, not with sessions left calling.
        w.daemon = True
        w.start()
    # Ctrl-C or a SIGTERM stops the run early: the servers are ended and what ran is reported.
    def stop(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    interrupted = False
    # A progress line a minute on stderr, so a long run that is cut short still tells its count.
    started = time.time()
    try:
        while any(w.is_alive() for w in workers):
            for w in workers:
                w.join(timeout=60.0 / len(workers))
            if time.time() - started >= 60 and any(w.is_alive() for w in workers):
                started = time.time()
                held = resources.sample()
                with stats.lock:
                    print("progress: %d calls, %d answered, %d unanswered, %d stalls | %s" % (stats.calls, stats.answered, stats.unanswered, len(stats.stalls), held), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: ending the servers and reporting what ran", file=sys.stderr, flush=True)
    # The figures as they stand now: sessions still running after an interruption see the servers
    # end, which is not the servers' failure.
    with stats.lock:
        calls, answered, unanswered = stats.calls, stats.answered, stats.unanswered
        stalls, latencies, by_kind = list(stats.stalls), sorted(stats.latencies), {k: tuple(v) for k, v in stats.by_kind.items()}
    resources.sample()
    if serve.poll() is not None:
        crashes.append("glovebox serve exited with %s: %s" % (serve.returncode, "".join(serve_err[-5:])))
    serve.terminate()
    try:
        serve.wait(timeout=20)
    except subprocess.TimeoutExpired:
        serve.kill()
    crashes.extend("serve stderr: " + l for l in serve_err if "panicked" in l)
    lat = latencies or [0.0]
    report = {
        "seed": seed, "seconds": seconds, "interrupted": interrupted, "sessions": sessions, "calls": calls, "answered": answered,
        "unanswered": unanswered, "stalls": stalls[:20], "crashes": crashes[:20],
        "p50_ms": round(lat[len(lat) // 2] * 1000, 1), "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 1),
        "held": resources.report(),
    }
    print(json.dumps(report))
    if os.environ.get("BY_KIND"):
        for kind, (n, total) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
            print("%-16s %7d calls %9.1f s %8.1f ms mean" % (kind, n, total, total / n * 1000), file=sys.stderr)
    sys.exit(1 if crashes or stalls or unanswered else 130 if interrupted else 0)


if __name__ == "__main__":
    main()
