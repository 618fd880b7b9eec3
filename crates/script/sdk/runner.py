"""Glovebox's persistent gui_exec runner, started inside the sandbox (never outside it).

It keeps one namespace across calls, runs each call's code with top-level `await`, sends what
the code prints as output frames, and reports the end of each call. Its channel to the host is
the pair of descriptors it was started with; everything it sends is checked by the host, which
trusts nothing that runs here (this file included).
"""

import ast
import asyncio
import builtins
import io
import os
import platform
import resource
import sys
import traceback

sys.path.insert(0, "/sdk")

# The channel: private copies of stdin/stdout; fd 0 becomes /dev/null and fd 1 goes to stderr,
# so a stray write to fd 1 cannot be taken for a frame.
_IN = os.dup(0)
_OUT = os.dup(1)
_null = os.open("/dev/null", os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
os.dup2(2, 1)

# Resource limits, set before any script runs (hard limits: a script cannot raise them again).
for _limit, _value in (
    (resource.RLIMIT_AS, 1 << 30),
    (resource.RLIMIT_NOFILE, 64),
    (resource.RLIMIT_FSIZE, 64 << 20),
    (resource.RLIMIT_CORE, 0),
):
    resource.setrlimit(_limit, (_value, _value))

import glovebox  # noqa: E402  (after sys.path)

_channel = glovebox._Channel(_IN, _OUT)


class _Capture(io.TextIOBase):
    """What the script prints, sent in output frames."""

    def __init__(self):
        self._parts = []
        self._size = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            s = str(s)
        self._parts.append(s)
        self._size += len(s)
        if self._size >= 8192:
            self.flush()
        return len(s)

    def flush(self):
        if self._parts:
            text = "".join(self._parts)
            self._parts, self._size = [], 0
            _channel.send({"type": "output", "text": text})


def _script_frames(tb):
    """The traceback's frames from the script itself (not the runner's or the SDK's)."""
    frames = [f for f in traceback.extract_tb(tb) if f.filename == "<gui_exec>"]
    return "".join(traceback.format_list(frames[-5:]))


async def _run(code, namespace):
    tree = ast.parse(code, "<gui_exec>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    result = eval(compile(tree, "<gui_exec>", "exec", flags=flags), namespace)
    if asyncio.iscoroutine(result):
        await result
    if last is not None:
        value = eval(compile(last, "<gui_exec>", "eval", flags=flags), namespace)
        if asyncio.iscoroutine(value):
            value = await value
        if value is not None:
            glovebox.display(value)


def _cancel_leftovers(loop):
    """Tasks a call started and did not await end with the call (none outlives it)."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def main():
    namespace = {"__name__": "__gui__", "__builtins__": builtins}
    glovebox._install(namespace, _channel)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _channel.send({"type": "ready", "python": platform.python_version()})
    while True:
        try:
            kind, message = _channel.read()
        except EOFError:
            return
        if kind != "json" or message.get("type") != "run":
            continue
        glovebox._begin(message)
        capture = _Capture()
        sys.stdout = capture
        sys.stderr = capture
        ok, error = True, None
        try:
            loop.run_until_complete(_run(message.get("code", ""), namespace))
        except BaseException as e:  # the script's failure is reported, never the runner's end
            ok = False
            error = {
                "type": type(e).__name__,
                "message": str(e)[:2000],
                "traceback": _script_frames(e.__traceback__)[:4000],
            }
            code = getattr(e, "code", None)
            if isinstance(e, glovebox.GloveboxError) and isinstance(code, str):
                error["code"] = code
        try:
            _cancel_leftovers(loop)
        except BaseException:
            pass
        try:
            capture.flush()
        finally:
            sys.stdout = sys.__stdout__
            sys.stderr = sys.__stderr__
        _channel.send({"type": "done", "ok": ok, "error": error})


main()
