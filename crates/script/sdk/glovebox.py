"""The Glovebox SDK for gui_exec scripts.

Inside a gui_exec call these names are ready: `ui`, `display`, `sleep`. Everything a script does
to a surface is a request to Glovebox's broker, which holds the real tabs and windows, their
leases and the person's permissions, and runs each request through the same checks as the `act`
tool. Proxies (pages, locators) survive across calls, but every use is checked again.

    page = await ui.browser.open("https://example.org", background=True)
    obs = await page.observe()
    field = page.get_by_role("textbox", name="Search")
    await field.fill("bearing dimensions")
    await field.press("Enter")
    await page.wait_for_text("Results", timeout_ms=5000)
    display(await page.screenshot())
"""

import asyncio
import json
import os
import struct

__all__ = ["ui", "display", "sleep", "GloveboxError", "NeedsApproval", "StaleObservation"]

MAX_JSON = 1 << 20
MAX_IMAGE = 8 << 20


class GloveboxError(Exception):
    """A primitive the broker refused or that failed; `code` is from Glovebox's closed set."""

    def __init__(self, code, message, operation=None, details=None, state=None, effect_uncertain=False):
        super().__init__(f"{code}: {message}" + (f" (during {operation})" if operation else ""))
        self.code = code
        self.message = message
        self.operation = operation
        self.details = details or {}
        self.state = state
        self.effect_uncertain = effect_uncertain


class NeedsApproval(GloveboxError):
    """A person has to approve this step first; call again once they have."""


class StaleObservation(GloveboxError):
    """The page changed since the token the step named; observe again."""


class OriginDenied(GloveboxError):
    pass


class LimitReached(GloveboxError):
    pass


_ERRORS = {
    "needs_approval": NeedsApproval,
    "stale_observation": StaleObservation,
    "origin_denied": OriginDenied,
    "step_limit": LimitReached,
}


class _Channel:
    """Length-prefixed frames over the two descriptors the host gave the runner."""

    def __init__(self, rfd, wfd):
        self._r = rfd
        self._w = wfd

    def _read_exact(self, n):
        parts = []
        while n:
            chunk = os.read(self._r, min(n, 1 << 16))
            if not chunk:
                raise EOFError
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def read(self):
        (length,) = struct.unpack(">I", self._read_exact(4))
        if length == 0:
            raise EOFError
        body = self._read_exact(length)
        kind, data = body[:1], body[1:]
        if kind == b"J":
            return "json", json.loads(data)
        return "image", data

    def _write(self, kind, body):
        data = struct.pack(">I", len(body) + 1) + kind + body
        view = memoryview(data)
        while view:
            n = os.write(self._w, view)
            view = view[n:]

    def send(self, obj):
        self._write(b"J", json.dumps(obj).encode())

    def send_image(self, data):
        self._write(b"I", data)


class _State:
    channel = None
    generation = 0
    surface = None
    next_op = 0
    images = 0
    image_limit = 4


def _begin(message):
    _State.generation = message.get("generation", 0)
    _State.surface = message.get("surface")
    _State.next_op = 0
    _State.images = 0
    _State.image_limit = (message.get("limits") or {}).get("images", 4)


def _install(namespace, channel):
    _State.channel = channel
    namespace["ui"] = ui
    namespace["display"] = display
    namespace["sleep"] = sleep


async def _request(method, resource=None, observation=None, **arguments):
    _State.next_op += 1
    op = f"op-{_State.next_op}"
    _State.channel.send({
        "type": "request",
        "operation_id": op,
        "generation": _State.generation,
        "resource": resource,
        "method": method,
        "arguments": {k: v for k, v in arguments.items() if v is not None},
        "observation": observation,
    })
    kind, reply = _State.channel.read()
    if kind != "json" or reply.get("type") != "reply":
        raise GloveboxError("internal", "the broker answered out of turn", f"{op} {method}")
    if not reply.get("ok"):
        e = reply.get("error") or {}
        cls = _ERRORS.get(e.get("code"), GloveboxError)
        raise cls(
            e.get("code", "internal"),
            e.get("message", ""),
            f"{op} {method}",
            e.get("details"),
            e.get("state"),
            e.get("effect_uncertain", False),
        )
    value = reply.get("value") or {}
    if value.get("image"):
        kind, data = _State.channel.read()
        value["image"] = Image(data)
    return value


async def sleep(seconds):
    """Waits in the script (counted against the call's time)."""
    await asyncio.sleep(seconds)


class Image:
    """A PNG a primitive returned; `display(image)` shows it to the model."""

    def __init__(self, data, mime="image/png"):
        self.data = bytes(data)
        self.mime = mime

    def __repr__(self):
        return f"<Image {self.mime}, {len(self.data)} bytes>"


class Observation:
    """What a surface shows: `text` (the page's outline with refs), `frame_id`, `url`, `title`."""

    def __init__(self, value):
        self.frame_id = value.get("observation")
        self.text = value.get("text", "")
        self.url = value.get("url", "")
        self.title = value.get("title", "")
        self.surface = value.get("surface")

    def __contains__(self, text):
        return text in self.text

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<Observation {self.surface} {self.frame_id} {self.url!r}>"


class Receipt:
    """What an action did: `state` (applied, failed, unknown) and `effect_uncertain`."""

    def __init__(self, value):
        self.value = value
        self.state = value.get("state")
        self.effect_uncertain = value.get("effect_uncertain", False)
        self.receipt = value.get("receipt", {})
        self.frame_id = value.get("observation")

    def __repr__(self):
        return f"<Receipt {self.receipt.get('action')} {self.state}{' (uncertain)' if self.effect_uncertain else ''}>"


def _step(kind, **fields):
    out = {}
    for key, value in fields.items():
        if value is not None:
            out[key] = value
    return {"kind": kind, **out}


class _Locating:
    """What pages and frames share: making locators."""

    _page = None
    _frame = None

    def _locator(self, spec):
        if self._frame:
            spec = dict(spec, frame=list(self._frame))
        return Locator(self._page, spec)

    def get_by_role(self, role, name=None, exact=False):
        spec = {"kind": "role", "role": role}
        if name is not None:
            spec["name"] = name
        if exact:
            spec["exact"] = True
        return self._locator(spec)

    def get_by_label(self, text, exact=False):
        return self._locator({"kind": "label", "text": text, **({"exact": True} if exact else {})})

    def get_by_text(self, text, exact=False):
        return self._locator({"kind": "text", "text": text, **({"exact": True} if exact else {})})

    def get_by_test_id(self, test_id):
        return self._locator({"kind": "test_id", "id": test_id})

    def frame(self, title=None, test_id=None, ref=None, exact=False):
        """The frame to enter (by its title, test id or element ref) for the locators made from it."""
        if ref is not None:
            step = {"kind": "element", "ref": ref}
        elif test_id is not None:
            step = {"kind": "test_id", "id": test_id}
        elif title is not None:
            step = {"kind": "title", "text": title, **({"exact": True} if exact else {})}
        else:
            raise ValueError("frame() needs title, test_id or ref")
        return _Frame(self._page, (self._frame or ()) + (step,))


class _Frame(_Locating):
    def __init__(self, page, chain):
        self._page = page
        self._frame = tuple(chain)


class Page(_Locating):
    """A surface of the session (a tab, a window), by its key."""

    def __init__(self, name):
        self.name = name
        self._page = self
        self._token = None

    def __repr__(self):
        return f"<Page {self.name}>"

    async def observe(self, near=None, screenshot=False):
        value = await _request("observe", self.name, self._token, near=near, screenshot=screenshot or None)
        self._token = value.get("observation", self._token)
        obs = Observation(value)
        if isinstance(value.get("image"), Image):
            obs.screenshot = value["image"]
        return obs

    async def screenshot(self):
        value = await _request("screenshot", self.name, self._token)
        self._token = value.get("observation", self._token)
        return value["image"]

    async def _act(self, action, retry_stale):
        if self._token is None:
            await self.observe()
        action = dict(action)
        action.setdefault("intent", "a gui_exec step")
        for attempt in (0, 1):
            action["expected_frame_id"] = self._token
            try:
                value = await _request("act", self.name, self._token, action=action)
            except StaleObservation:
                # Refused before anything was sent: a locator is found afresh on a new frame.
                if attempt or not retry_stale:
                    raise
                await self.observe()
                continue
            self._token = value.get("observation", self._token)
            return Receipt(value)

    async def goto(self, url):
        return await self._act({"type": "navigate", "url": url}, True)

    async def click_at(self, x, y, button="left", click_count=1):
        return await self._act({"type": "click", "target": {"kind": "point", "x": x, "y": y},
                                "button": button, "click_count": click_count}, False)

    async def scroll(self, dy=0, dx=0):
        action = {"type": "scroll"}
        if dy:
            action["delta_y"] = dy
        if dx:
            action["delta_x"] = dx
        return await self._act(action, True)

    async def wait(self, ms):
        return await self._act({"type": "wait", "duration_ms": ms}, True)

    async def wait_for_text(self, text, timeout_ms=5000):
        value = await _request("wait_for", self.name, self._token, text=text, timeout_ms=timeout_ms)
        self._token = value.get("observation", self._token)
        return Observation(value)

    async def wait_for(self, locator, timeout_ms=5000):
        value = await _request("wait_for", self.name, self._token, locator=locator.spec, timeout_ms=timeout_ms)
        self._token = value.get("observation", self._token)
        return Observation(value)

    def ref(self, element_ref):
        """An element by its ref in the latest observation (`e12`)."""
        return Locator(self, {"kind": "element", "ref": element_ref})

    async def close(self):
        await _request("close", self.name)


class Locator:
    """An element found afresh on each use: by role, label, text, test id or ref."""

    def __init__(self, page, spec):
        self.page = page
        self.spec = spec

    def __repr__(self):
        return f"<Locator {json.dumps(self.spec)} on {self.page.name}>"

    @property
    def _fresh(self):
        # A ref means one frame's element; a locator is found again on a newer frame.
        return self.spec.get("kind") != "element"

    async def click(self, button="left", click_count=1, modifiers=None, expect_download=False):
        action = {"type": "click", "target": self.spec, "button": button, "click_count": click_count}
        if modifiers:
            action["modifiers"] = list(modifiers)
        if expect_download:
            action["expect_download"] = True
        return await self.page._act(action, self._fresh)

    async def dblclick(self):
        return await self.click(click_count=2)

    async def fill(self, text, mode=None):
        action = {"type": "type", "target": self.spec, "text": text}
        if mode:
            action["mode"] = mode
        return await self.page._act(action, self._fresh)

    async def press(self, key):
        return await self.page._act({"type": "press", "target": self.spec, "key": key}, self._fresh)

    async def select(self, value=None, values=None):
        action = {"type": "select", "target": self.spec}
        if values is not None:
            action["values"] = list(values)
        else:
            action["value"] = value
        return await self.page._act(action, self._fresh)

    select_option = select

    async def hover(self):
        return await self.page._act({"type": "hover", "target": self.spec}, self._fresh)

    async def scroll(self, dy=0, dx=0):
        action = {"type": "scroll", "target": self.spec}
        if dy:
            action["delta_y"] = dy
        if dx:
            action["delta_x"] = dx
        return await self.page._act(action, self._fresh)

    async def drag_to(self, target):
        if isinstance(target, Locator):
            destination = target.spec
        else:
            x, y = target
            destination = {"kind": "point", "x": x, "y": y}
        return await self.page._act({"type": "drag", "source": self.spec, "destination": destination}, self._fresh)


class _Browser:
    async def open(self, url, background=True):
        """Opens a tab of the session at `url` (Glovebox's origin policy decides, as for tab_open)."""
        value = await _request("open", None, None, url=url, background=background)
        page = Page(value["surface"])
        page._token = value.get("observation")
        return page


class _UI:
    browser = _Browser()

    def page(self, name=None):
        """The call's surface (the one gui_exec named, else the focused one), or one by key."""
        name = name or _State.surface
        if not name:
            raise GloveboxError("ambiguous_surface", "this call has no surface; open one with ui.browser.open(url)")
        return Page(name)

    async def surfaces(self):
        """The session's surfaces: key, kind, url, title."""
        return (await _request("surfaces"))["surfaces"]


ui = _UI()


def display(*objects):
    """Shows objects to the model: images as image blocks (up to the call's limit), the rest as text."""
    for obj in objects:
        if isinstance(obj, Observation) and getattr(obj, "screenshot", None) is not None:
            display(obj.text, obj.screenshot)
            continue
        if isinstance(obj, Image):
            if _State.images >= _State.image_limit:
                raise GloveboxError("step_limit", f"this call may display {_State.image_limit} images")
            _State.images += 1
            import sys
            sys.stdout.flush()
            _State.channel.send({"type": "display", "mime": obj.mime})
            _State.channel.send_image(obj.data)
            continue
        print(obj if isinstance(obj, str) else (str(obj) if isinstance(obj, Observation) else repr(obj)))
