// Glovebox console: the person's view of a running `glovebox serve`. It talks only to the
// person channel (/api/…) with the person token, which arrives in the URL fragment `glovebox
// serve` printed (a fragment is never sent to a server) and is kept in sessionStorage. Page
// content (titles, URLs, element names) is shown as text, never as markup.
"use strict";

const STRINGS = {
  en: {
    title: "Glovebox console", resources: "Resources", preview: "Preview", approvals: "Approvals", log: "Operation log",
    time: "Time", what: "What", where: "Where", state: "State", noPreview: "Choose a tab in Resources to preview it (read-only).",
    needToken: "Open the console with the link `glovebox serve` printed (it carries the person token).",
    connected: "connected", disconnected: "disconnected — retrying", noApprovals: "Nothing waits for you.", noTabs: "No tabs yet.",
    approveOnce: "Approve once", approveTask: "Allow for this task", deny: "Deny", expires: "expires in", why: "Why",
    action: "Action", origin: "Where", tier: "Tier", closed: "Closed pages", unavailable: "Unavailable", noSession: "The person's tabs",
    previewTab: "Preview in session", offerTab: "Offer to agents", offered: "offered to agents", linkTab: "Link for the agent's next turn", openedBy: "opened by", closeTab: "Close page", hide: "Hide preview", show: "Show preview", live: "live",
    lastFrame: "last frame", confirmClose: "Close this page for good? It stays closed, also after a restart:", operating: "operating",
    failed: "failed", asker: "asked by", typed: "types", files: "files", approvalAsked: "An approval waits for you", branch: "branch", denied: "Denied", approved: "Approved",
    needsYou: "A run needs you", continueRun: "Continue", continued: "Continued",
    takeOver: "Pause agent, I'll take over", handBack: "Let the agent continue", idle: "can operate directly", in_use: "in use",
    pausing: "pausing…", paused: "paused", pause_failed: "pause failed, retry",
    session: "session", mark: "kept as", hasActions: "the agent acted on it in this view", openPage: "Open page", showActions: "Show the last action", pinned: "Pinned preview (click to follow the agent)", following: "Following the agent (click to pin)",
    entryLabel: "The page itself: your pointer and keys act on it (F6 leaves)", back: "Back", forward: "Forward", reload: "Reload", go: "Go",
    held: "Holds what the agent typed; requests go only where you allowed", blockedTo: "blocked", allowOrigin: "Allow for this tab",
    confirmAllow: "Let this page send requests to this origin while it holds what the agent typed?",
  },
  zh: {
    title: "Glovebox 控制台", resources: "资源", preview: "预览", approvals: "审批", log: "操作记录",
    time: "时间", what: "操作", where: "位置", state: "状态", noPreview: "在资源中选择一个网页以预览（只读）。",
    needToken: "请用 `glovebox serve` 打印的链接打开控制台（其中带有个人令牌）。",
    connected: "已连接", disconnected: "连接已断开，正在重试", noApprovals: "没有等待你的审批。", noTabs: "还没有网页。",
    approveOnce: "仅批准这一次", approveTask: "本任务内允许", deny: "拒绝", expires: "剩余", why: "原因",
    action: "操作", origin: "位置", tier: "等级", closed: "已关闭的网页", unavailable: "不可用", noSession: "用户的网页",
    previewTab: "在会话中预览", offerTab: "交给代理", offered: "已交给代理", linkTab: "关联给 Agent 的下一轮", openedBy: "打开自", closeTab: "关闭网页", hide: "隐藏预览", show: "显示预览", live: "实时",
    lastFrame: "最后画面", confirmClose: "永久关闭这个网页？重启后也保持关闭：", operating: "正在操作",
    failed: "失败", asker: "请求方", typed: "输入", files: "文件", approvalAsked: "有审批在等你", branch: "分支", denied: "已拒绝", approved: "已批准",
    needsYou: "有任务需要你", continueRun: "继续", continued: "已继续",
    takeOver: "暂停 Agent，我来操作", handBack: "让 Agent 继续", idle: "可直接操作", in_use: "使用中",
    pausing: "正在暂停…", paused: "已暂停", pause_failed: "暂停失败，请重试",
    session: "会话", mark: "保留为", hasActions: "Agent 在此视图中操作过它", openPage: "打开网页", showActions: "显示最近一次操作", pinned: "已固定预览（点击改为跟随 Agent）", following: "正在跟随 Agent（点击固定）",
    entryLabel: "网页本身：你的指针和按键直接作用于它（按 F6 离开）", back: "后退", forward: "前进", reload: "刷新", go: "前往",
    held: "保存着 Agent 输入的内容；请求只发往你允许的位置", blockedTo: "已拦截", allowOrigin: "本网页允许",
    confirmAllow: "允许这个网页在保存 Agent 输入内容期间向该来源发送请求？",
  },
};
const lang = (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
const t = (key) => STRINGS[lang][key] || STRINGS.en[key] || key;

const state = { token: "", selected: null, pinned: false, showActions: true, lastMarker: null, lastOperated: null, tabs: [], previewHidden: false, lastFrameAt: 0, seenApprovals: new Set(), operating: new Set() };

function takeToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("token")) {
    sessionStorage.setItem("glovebox-person-token", hash.get("token"));
    history.replaceState(null, "", location.pathname);
  }
  state.token = sessionStorage.getItem("glovebox-person-token") || "";
}

async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: { ...(options.headers || {}), Authorization: `Bearer ${state.token}`, "Content-Type": "application/json" } });
  if (!response.ok) {
    let message = `${response.status}`;
    try { const body = await response.json(); message = body.message || body.error || message; } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return node;
}

const ICONS = {
  eye: '<path d="M2 12s3.5-7 10-7 10 7 10 7-3.5 7-10 7-10-7-10-7Z"/><circle cx="12" cy="12" r="3"/>',
  x: '<path d="M18 6 6 18"/><path d="m6 6 12 12"/>',
  link: '<path d="M10 13a5 5 0 0 0 7.54.54l3-3a5 5 0 0 0-7.07-7.07l-1.72 1.71"/><path d="M14 11a5 5 0 0 0-7.54-.54l-3 3a5 5 0 0 0 7.07 7.07l1.71-1.71"/>',
  send: '<path d="M14.536 21.686a.5.5 0 0 0 .937-.024l6.5-19a.496.496 0 0 0-.635-.635l-19 6.5a.5.5 0 0 0-.024.937l7.93 3.18a2 2 0 0 1 1.112 1.11z"/><path d="m21.854 2.147-10.94 10.939"/>',
  pointer: '<path d="M14 4.1 12 6"/><path d="m5.1 8-2.9-.8"/><path d="m6 12-1.9 2"/><path d="M7.2 2.2 8 5.1"/><path d="M9.037 9.69a.498.498 0 0 1 .653-.653l11 4.5a.5.5 0 0 1-.074.949l-4.349 1.041a1 1 0 0 0-.74.739l-1.04 4.35a.5.5 0 0 1-.95.074z"/>',
};
function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24"); svg.setAttribute("width", "14"); svg.setAttribute("height", "14"); svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("fill", "none"); svg.setAttribute("stroke", "currentColor"); svg.setAttribute("stroke-width", "2"); svg.setAttribute("stroke-linecap", "round"); svg.setAttribute("stroke-linejoin", "round");
  svg.innerHTML = ICONS[name];
  return svg;
}

function announce(text) {
  const alerts = document.getElementById("alerts");
  alerts.textContent = "";
  setTimeout(() => { alerts.textContent = text; }, 20);
}

function setConnected(ok) {
  document.getElementById("conn").textContent = ok ? t("connected") : t("disconnected");
}

// --- Resources ---------------------------------------------------------------------------

function groupKey(tab) {
  if (tab.state === "closed") return ["closed", t("closed")];
  if (tab.state === "restore_failed" || tab.state === "gone") return ["unavailable", t("unavailable")];
  if (!tab.session) return ["person", t("noSession")];
  const branch = tab.branch ? ` · ${t("branch")} ${tab.branch}` : "";
  return [`${tab.session}/${tab.branch || ""}`, `${tab.session}${branch}`];
}

function renderResources(tabs) {
  const root = document.getElementById("resources");
  root.replaceChildren();
  if (!tabs.length) { root.append(el("p", { class: "muted" }, t("noTabs"))); return; }
  const groups = new Map();
  for (const tab of tabs) {
    const [key, label] = groupKey(tab);
    if (!groups.has(key)) groups.set(key, { label, tabs: [] });
    groups.get(key).tabs.push(tab);
  }
  const order = [...groups.keys()].sort((a, b) => (a === "closed") - (b === "closed") || (a === "unavailable") - (b === "unavailable"));
  for (const key of order) {
    const group = groups.get(key);
    const list = el("div", { role: "list" });
    const header = el("button", { type: "button", class: "group-header", "aria-expanded": "true", onclick: () => {
      const open = header.getAttribute("aria-expanded") === "true";
      header.setAttribute("aria-expanded", String(!open)); list.hidden = open;
    } }, group.label, el("span", { class: "count" }, String(group.tabs.length)));
    for (const tab of group.tabs) list.append(row(tab));
    root.append(el("div", { class: "group", "data-group": key }, header, list));
  }
}

function row(tab) {
  const live = tab.state === "open";
  const operating = state.operating.has(tab.tab);
  const sub = [tab.url || "", tab.opened_by ? `${t("openedBy")} ${tab.opened_by}` : "", tab.mark !== "none" ? tab.mark : "", tab.state, tab.offered ? t("offered") : ""].filter(Boolean).join(" · ");
  const node = el("div", { role: "listitem", class: `row${state.selected === tab.tab ? " selected" : ""}`, "data-tab": tab.tab, tabindex: "0",
    onclick: (e) => { if (!e.target.closest("button") && live) select(tab); },
    onkeydown: (e) => { if ((e.key === "Enter" || e.key === " ") && e.target === node && live) { e.preventDefault(); select(tab); } } },
    el("span", { class: `dot${operating ? "" : " idle"}`, title: operating ? t("operating") : "", "aria-label": operating ? t("operating") : null }),
    el("div", { class: "text" }, el("div", { class: "title" }, tab.title || tab.url || tab.tab), el("div", { class: "sub" }, sub), hold(tab)));
  if (live) {
    node.append(el("button", { type: "button", class: "icon-button", "data-action": "preview", title: t("previewTab"), "aria-label": `${t("previewTab")}: ${tab.title || tab.tab}`, onclick: () => select(tab) }, icon("eye")));
    node.append(el("button", { type: "button", class: "icon-button", "data-action": "open", title: t("openPage"), "aria-label": `${t("openPage")}: ${tab.title || tab.tab}`, onclick: () => openPage(tab) }, icon("pointer")));
    // A person's tab no session may claim yet (a kept tab a restart brought back): offered only
    // by the person, here.
    // A window a page opened: a run uses it only after the person links it (from the next turn).
    if (tab.linkable) node.append(el("button", { type: "button", class: "icon-button", "data-action": "link", title: t("linkTab"), "aria-label": `${t("linkTab")}: ${tab.title || tab.tab}`, onclick: () => linkTab(tab) }, icon("link")));
    if (tab.offerable) node.append(el("button", { type: "button", class: "icon-button", "data-action": "offer", title: t("offerTab"), "aria-label": `${t("offerTab")}: ${tab.title || tab.tab}`, onclick: () => offerTab(tab) }, icon("send")));
    node.append(el("button", { type: "button", class: "icon-button", "data-action": "close", title: t("closeTab"), "aria-label": `${t("closeTab")}: ${tab.title || tab.tab}`, onclick: () => closeTab(tab) }, icon("x")));
  }
  return node;
}

// A tab that holds what the agent typed: where its requests were refused, and the person's
// "allow" for one origin (origins are page-chosen text: shown as text, never as markup).
function hold(tab) {
  const held = tab.network_hold;
  if (!held) return null;
  const node = el("div", { class: "hold", "data-hold": tab.tab }, el("div", { class: "sub" }, t("held")));
  for (const refused of held.refused || []) {
    node.append(el("div", { class: "sub", "data-refused": refused.origin }, `${t("blockedTo")}: ${refused.origin} (${refused.requests}) `,
      el("button", { type: "button", "data-action": "allow-origin", "aria-label": `${t("allowOrigin")}: ${refused.origin}`, onclick: () => allowOrigin(tab, refused.origin) }, t("allowOrigin"))));
  }
  return node;
}

async function allowOrigin(tab, origin) {
  if (!confirm(`${t("confirmAllow")}\n${origin}\n${tab.url || tab.tab}`)) return;
  try {
    await api(`/api/tabs/${encodeURIComponent(tab.tab)}/allow-origin`, { method: "POST", body: JSON.stringify({ origin }) });
    await refresh();
  } catch (e) { announce(`${t("failed")}: ${e.message}`); }
}

function renderControl(tab) {
  const label = document.getElementById("control-state");
  const take = document.getElementById("take-over");
  const give = document.getElementById("hand-back");
  let control = tab ? tab.control || "idle" : null;
  // The seed's two states the runtime cannot report itself: the view lost its page, or a pause
  // asked while the page does not answer.
  if (control && state.selected && view.resource === state.selected && !view.ws) control = "disconnected";
  else if (control === "pausing" && view.frame && !view.live) control = "cannot_confirm";
  label.textContent = control ? t(control) : "";
  label.dataset.control = control || "";
  take.hidden = !control || control === "idle";
  give.hidden = !control || control === "idle";
  take.disabled = control === "pausing" || control === "paused" || control === "disconnected";
  give.disabled = control !== "paused";
}

async function control(action) {
  if (!state.selected) return;
  if (action === "take-over") { state.pending = "pausing"; renderControl({ control: "pausing" }); }
  try {
    const reply = await (await api(`/api/tabs/${encodeURIComponent(state.selected)}/${action}`, { method: "POST", body: "{}" })).json();
    announce(t(reply.control));
  } catch (e) { announce(`${t("failed")}: ${e.message}`); }
  state.pending = null;
  await refresh();
}

// A person's choice pins the preview; auto-follow selects without pinning.
function select(tab, pin = true) {
  if (pin && !state.pinned) togglePin();
  const changed = state.selected !== tab.tab;
  state.selected = tab.tab;
  document.getElementById("preview-h").textContent = tab.title || tab.url || tab.tab;
  document.querySelectorAll(".row").forEach((r) => r.classList.toggle("selected", r.dataset.tab === tab.tab));
  if (changed || !view.ws) {
    state.lastFrameAt = 0;
    document.getElementById("preview-img").hidden = true;
    document.getElementById("preview-empty").hidden = false;
    openView(tab.tab);
    frameLabel();
  }
}

function openPage(tab) {
  select(tab);
  setEntry(true);
}

async function offerTab(tab) {
  try {
    await api(`/api/tabs/${encodeURIComponent(tab.tab)}/offer`, { method: "POST", body: "{}" });
    await refresh();
  } catch (e) { announce(`${t("failed")}: ${e.message}`); }
}

async function linkTab(tab) {
  try {
    await api(`/api/tabs/${encodeURIComponent(tab.tab)}/link`, { method: "POST", body: "{}" });
    await refresh();
  } catch (e) { announce(`${t("failed")}: ${e.message}`); }
}

async function closeTab(tab) {
  const refs = [tab.title || "", tab.url || tab.tab, tab.session ? `${t("session")} ${tab.session}${tab.branch ? ` · ${t("branch")} ${tab.branch}` : ""}` : t("noSession"),
    tab.mark && tab.mark !== "none" ? `${t("mark")}: ${tab.mark}` : "", state.lastMarker && state.lastMarker.tab === tab.tab ? t("hasActions") : ""].filter(Boolean);
  if (!confirm(`${t("confirmClose")}\n${refs.join("\n")}`)) return;
  try {
    await api(`/api/tabs/${encodeURIComponent(tab.tab)}/close`, { method: "POST", body: "{}" });
    if (state.selected === tab.tab) state.selected = null;
    await refresh();
  } catch (e) { announce(`${t("failed")}: ${e.message}`); }
}

// --- Live view and real entry (WebSocket /api/tabs/{id}/view) -----------------------------
// The preview is the page's screencast: frames carry resource, binding generation and sequence
// (an old binding's or an out-of-order frame is dropped); capture runs only while the preview
// is shown and on screen. "Open page" makes the same view the person's real entry: pointer,
// wheel and keys go to the page as the person's input (the runtime pauses the agent on input
// that acts). Nothing is ever injected into the page.

const view = { ws: null, resource: null, generation: 0, seq: 0, live: false, frame: null, entry: false, onScreen: true, nextInput: 0, done: 0, lastMove: 0 };

function openView(resource) {
  closeView();
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/tabs/${encodeURIComponent(resource)}/view`);
  Object.assign(view, { ws, resource, generation: 0, seq: 0, live: false, frame: null });
  ws.onopen = () => ws.send(JSON.stringify({ type: "hello", token: state.token }));
  ws.onmessage = (m) => { try { onViewMessage(ws, JSON.parse(m.data)); } catch (_) { /* not JSON: ignored */ } };
  ws.onclose = () => {
    if (view.ws !== ws) return;
    view.ws = null; view.live = false; frameLabel();
    setTimeout(() => { if (state.selected === resource && !view.ws) openView(resource); }, 1000);
  };
}

function closeView() {
  const ws = view.ws;
  view.ws = null; view.resource = null; view.frame = null;
  if (ws) ws.close();
}

function wantFrames() { return !state.previewHidden && document.visibilityState === "visible" && view.onScreen; }

function syncCapture() {
  if (view.ws && view.ws.readyState === WebSocket.OPEN && view.generation) view.ws.send(JSON.stringify({ type: wantFrames() ? "show" : "hide" }));
}

function onViewMessage(ws, m) {
  if (ws !== view.ws) return; // an old binding's message
  if (m.type === "bound") { view.generation = m.generation; syncCapture(); }
  else if (m.type === "frame") {
    if (m.generation !== view.generation || m.resource !== view.resource || m.seq <= view.seq) return;
    view.seq = m.seq; view.frame = m; view.live = true;
    state.lastFrameAt = m.captured_at || Date.now();
    drawFrame(m);
    frameLabel();
    drawMarkers();
  } else if (m.type === "status") {
    view.live = m.live && !!view.frame;
    if (!state.pending) renderControl({ control: m.control });
    frameLabel();
  } else if (m.type === "input_done") {
    view.done += 1;
    if (!state.pending) renderControl({ control: m.control });
  } else if (m.type === "error") {
    announce(`${t("failed")}: ${m.message}`);
  }
}

function drawFrame(frame) {
  const img = document.getElementById("preview-img");
  const bytes = Uint8Array.from(atob(frame.data), (c) => c.charCodeAt(0));
  const old = img.src;
  img.src = URL.createObjectURL(new Blob([bytes], { type: "image/jpeg" }));
  if (old.startsWith("blob:")) URL.revokeObjectURL(old);
  img.hidden = false;
  document.getElementById("preview-empty").hidden = true;
  img.alt = document.getElementById("preview-h").textContent;
  img.dataset.seq = String(frame.seq);
}

function frameLabel() {
  const label = document.getElementById("frame-label");
  if (!state.selected || !view.frame) { label.textContent = ""; label.dataset.stale = ""; return; }
  const stale = !view.live;
  label.textContent = stale ? `${t("lastFrame")} · ${new Date(state.lastFrameAt).toLocaleTimeString()}` : t("live");
  label.dataset.stale = String(stale);
}

function togglePreview() {
  state.previewHidden = !state.previewHidden;
  const button = document.getElementById("toggle-preview");
  button.setAttribute("aria-pressed", String(state.previewHidden));
  button.title = state.previewHidden ? t("show") : t("hide");
  button.setAttribute("aria-label", button.title);
  document.getElementById("preview-area").hidden = state.previewHidden;
  syncCapture();
}

function togglePin() {
  state.pinned = !state.pinned;
  const button = document.getElementById("pin");
  button.setAttribute("aria-pressed", String(state.pinned));
  button.title = state.pinned ? t("pinned") : t("following");
  button.setAttribute("aria-label", button.title);
  if (!state.pinned) follow();
}

// Auto-follow: the tab the agent operated last, unless the person pinned a preview.
function follow() {
  if (state.pinned || !state.lastOperated || state.lastOperated === state.selected) return;
  const tab = state.tabs.find((tab) => tab.tab === state.lastOperated && tab.state === "open");
  if (tab) select(tab, false);
}

function setEntry(on) {
  view.entry = on;
  const area = document.getElementById("preview-area");
  area.classList.toggle("entry", on);
  area.tabIndex = on ? 0 : -1;
  area.setAttribute("aria-label", on ? t("entryLabel") : "");
  document.getElementById("nav").hidden = !on;
  const button = document.getElementById("open-page");
  button.setAttribute("aria-pressed", String(on));
  if (on) { if (state.previewHidden) togglePreview(); area.focus(); }
}

function input(fields) {
  if (!view.entry || !view.ws || view.ws.readyState !== WebSocket.OPEN) return;
  view.nextInput += 1;
  view.ws.send(JSON.stringify({ type: "input", id: view.nextInput, ...fields }));
}

// A point of the image as CSS px of the page (the image is drawn with `contain`).
function pagePoint(e) {
  const img = document.getElementById("preview-img");
  if (!view.frame || img.hidden) return null;
  const box = img.getBoundingClientRect();
  const scale = Math.min(box.width / view.frame.width, box.height / view.frame.height);
  const left = box.left + (box.width - view.frame.width * scale) / 2, top = box.top + (box.height - view.frame.height * scale) / 2;
  const x = (e.clientX - left) / scale, y = (e.clientY - top) / scale;
  if (!(x >= 0 && y >= 0 && x <= view.frame.width && y <= view.frame.height)) return null;
  return { x, y };
}

const BUTTONS = ["left", "middle", "right", "back", "forward"];
const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);

function wireEntry() {
  const area = document.getElementById("preview-area");
  const img = document.getElementById("preview-img");
  img.addEventListener("dragstart", (e) => e.preventDefault());
  area.addEventListener("contextmenu", (e) => { if (view.entry) e.preventDefault(); });
  area.addEventListener("pointerdown", (e) => {
    const p = pagePoint(e); if (!view.entry || !p) return;
    e.preventDefault(); area.focus();
    input({ input: "pointer", event: "down", x: p.x, y: p.y, button: BUTTONS[e.button] || "left", click_count: Math.min(3, Math.max(1, e.detail || 1)), modifiers: modifiers(e) });
  });
  area.addEventListener("pointerup", (e) => {
    const p = pagePoint(e); if (!view.entry || !p) return;
    input({ input: "pointer", event: "up", x: p.x, y: p.y, button: BUTTONS[e.button] || "left", click_count: Math.min(3, Math.max(1, e.detail || 1)), modifiers: modifiers(e) });
  });
  area.addEventListener("pointermove", (e) => {
    const p = pagePoint(e); if (!view.entry || !p || Date.now() - view.lastMove < 50) return;
    view.lastMove = Date.now();
    input({ input: "pointer", event: "move", x: p.x, y: p.y, modifiers: modifiers(e) });
  });
  area.addEventListener("wheel", (e) => {
    const p = pagePoint(e); if (!view.entry || !p) return;
    e.preventDefault();
    input({ input: "pointer", event: "wheel", x: p.x, y: p.y, delta_x: e.deltaX, delta_y: e.deltaY, modifiers: modifiers(e) });
  }, { passive: false });
  const key = (event) => (e) => {
    if (!view.entry || e.key === "F6") return; // F6 leaves the page for the console
    e.preventDefault();
    input({ input: "key", event, key: e.key.slice(0, 32), code: e.code.slice(0, 32), key_code: e.keyCode & 255, modifiers: modifiers(e) });
  };
  area.addEventListener("keydown", key("down"));
  area.addEventListener("keyup", key("up"));
  document.getElementById("nav-back").addEventListener("click", () => input({ input: "history", to: "back" }));
  document.getElementById("nav-forward").addEventListener("click", () => input({ input: "history", to: "forward" }));
  document.getElementById("nav-reload").addEventListener("click", () => input({ input: "history", to: "reload" }));
  document.getElementById("nav").addEventListener("submit", (e) => {
    e.preventDefault();
    const url = document.getElementById("nav-url").value.trim();
    if (url) input({ input: "navigate", url });
  });
  new IntersectionObserver((entries) => { view.onScreen = entries.some((x) => x.isIntersecting); syncCapture(); }).observe(area);
}

// --- Action markers (drawn over the image from trusted records, never into the page) --------
// The last action on the previewed tab, from the operation log: its marker is drawn only over a
// frame of the same page, viewport and scroll offset; otherwise it stays in the log only.

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function markerValid(op, frame) {
  const m = op.marker, tab = state.tabs.find((tab) => tab.tab === op.tab);
  const near = (a, b) => Math.abs(a - b) <= 1;
  return !!frame && near(m.viewport[0], frame.width) && near(m.viewport[1], frame.height) && near(m.scroll[0], frame.scroll_x) && near(m.scroll[1], frame.scroll_y)
    && (!tab || !op.url || tab.url === op.url);
}

function drawMarkers() {
  const layer = document.getElementById("markers");
  layer.replaceChildren();
  const op = state.lastMarker, frame = view.frame, img = document.getElementById("preview-img");
  layer.dataset.drawn = "";
  if (!state.showActions || !op || !frame || img.hidden || op.tab !== view.resource || !markerValid(op, frame)) return;
  const area = document.getElementById("preview-area").getBoundingClientRect(), box = img.getBoundingClientRect();
  const s = Math.min(box.width / frame.width, box.height / frame.height);
  const ox = box.left - area.left + (box.width - frame.width * s) / 2, oy = box.top - area.top + (box.height - frame.height * s) / 2;
  const X = (x) => ox + x * s, Y = (y) => oy + y * s;
  layer.setAttribute("viewBox", `0 0 ${area.width} ${area.height}`);
  const m = op.marker, cls = `marker state-${op.state}`;
  const g = svg("g", { class: cls, "data-marker": m.kind, "data-operation": op.operation_id });
  const ring = (p, r) => g.append(svg("circle", { cx: X(p[0]), cy: Y(p[1]), r }));
  if (m.kind === "click" || m.kind === "hover") ring(m.points[0], m.kind === "click" ? 12 : 6);
  if (m.kind === "drag") {
    g.append(svg("polyline", { points: m.points.map((p) => `${X(p[0])},${Y(p[1])}`).join(" ") }));
    ring(m.points[0], 6); ring(m.points[m.points.length - 1], 10);
  }
  if (m.kind === "scroll" && m.delta) {
    const [x, y] = m.points[0], len = Math.hypot(m.delta[0], m.delta[1]) || 1;
    const ex = X(x) + (m.delta[0] / len) * 40, ey = Y(y) + (m.delta[1] / len) * 40;
    g.append(svg("line", { x1: X(x), y1: Y(y), x2: ex, y2: ey }));
    ring([x, y], 4);
  }
  if (m.kind === "type" && m.field) g.append(svg("rect", { x: X(m.field[0]), y: Y(m.field[1]), width: m.field[2] * s, height: m.field[3] * s, rx: 2 }));
  if (m.keys && m.keys.length) {
    const label = svg("text", { x: ox + 8, y: oy + 18 });
    label.textContent = m.keys.join(" ");
    g.append(label);
  }
  layer.append(g);
  layer.dataset.drawn = m.kind;
}

function toggleActions() {
  state.showActions = !state.showActions;
  document.getElementById("show-actions").setAttribute("aria-pressed", String(state.showActions));
  drawMarkers();
}

// --- Approvals ----------------------------------------------------------------------------

function renderApprovals(pending, waiting) {
  const root = document.getElementById("approvals");
  root.replaceChildren();
  for (const w of waiting) {
    if (!state.seenApprovals.has(w.run_id)) { state.seenApprovals.add(w.run_id); announce(`${t("needsYou")}: ${w.reason}`); }
    const go = async () => {
      try { await api(`/api/runs/${encodeURIComponent(w.run_id)}/continue`, { method: "POST", body: "{}" }); announce(t("continued")); await refresh(); }
      catch (e) { announce(`${t("failed")}: ${e.message}`); }
    };
    root.append(el("article", { class: "card", "data-waiting-run": w.run_id },
      el("div", {}, el("strong", {}, t("needsYou")), " · ", w.surface), el("p", {}, w.reason),
      el("div", { class: "actions" }, el("button", { type: "button", "data-continue": w.run_id, onclick: go }, t("continueRun")))));
  }
  if (!pending.length && !waiting.length) { root.append(el("p", { class: "muted" }, t("noApprovals"))); return; }
  for (const a of pending) {
    if (!state.seenApprovals.has(a.approval_id)) { state.seenApprovals.add(a.approval_id); announce(`${t("approvalAsked")}: ${a.action} ${a.target}`); }
    const left = Math.max(0, Math.round((a.expires_at - Date.now()) / 1000));
    const decide = (decision) => async () => {
      try {
        await api(`/api/approvals/${encodeURIComponent(a.approval_id)}`, { method: "POST", body: JSON.stringify({ decision }) });
        announce(decision === "deny" ? t("denied") : t("approved"));
        await refresh();
      } catch (e) { announce(`${t("failed")}: ${e.message}`); }
    };
    root.append(el("article", { class: "card", "data-approval": a.approval_id, "aria-label": `${a.action} ${a.target}` },
      el("div", {}, el("span", { class: `tier ${a.tier}` }, a.tier), " ", el("strong", {}, a.action), " ", a.target),
      el("dl", {}, el("dt", {}, t("asker")), el("dd", { class: "asker" }, `${a.client ? `${a.client} · ` : ""}${t("session")} ${a.session}`),
        el("dt", {}, t("origin")), el("dd", {}, a.origin), el("dt", {}, t("why")), el("dd", {}, a.reason),
        a.text != null ? el("dt", {}, t("typed")) : "", a.text != null ? el("dd", { class: "typed" }, a.text) : "",
        a.files && a.files.length ? el("dt", {}, t("files")) : "", a.files && a.files.length ? el("dd", { class: "files" }, a.files.join(", ")) : "",
        el("dt", {}, t("expires")), el("dd", {}, `${left} s`)),
      el("div", { class: "actions" },
        el("button", { type: "button", "data-decision": "approve_once", onclick: decide("approve_once") }, t("approveOnce")),
        a.tier === "R3" ? "" : el("button", { type: "button", "data-decision": "approve_for_task", onclick: decide("approve_for_task") }, t("approveTask")),
        el("button", { type: "button", class: "deny", "data-decision": "deny", onclick: decide("deny") }, t("deny")))));
  }
}

// --- Operation log ------------------------------------------------------------------------

function renderLog(entries) {
  const body = document.querySelector("#log tbody");
  body.replaceChildren();
  state.operating = new Set();
  state.lastMarker = null;
  const since = Date.now() - 10000;
  for (const e of entries) {
    const at = new Date(e.at).toLocaleTimeString();
    let what = "", where = "", st = "";
    if (e.kind === "operation") {
      what = `${e.action} ${e.target || ""}${e.text_chars != null ? ` (${e.text_chars}${e.secret ? " secret" : ""} chars)` : ""}`;
      where = e.url || ""; st = e.state + (e.error ? `: ${e.error}` : "");
      if (e.at > since && e.state !== "failed" && e.tab) state.operating.add(e.tab);
      if (e.tab) state.lastOperated = e.tab;
      if (e.marker && e.tab === state.selected) state.lastMarker = e;
    } else if (e.kind === "approval") {
      what = `approval ${e.tier} ${e.action}`; where = e.origin; st = e.outcome || "pending";
    } else if (e.kind === "run_started") {
      what = `run: ${e.task}`; where = e.surface; st = "started";
    } else if (e.kind === "run_ended") {
      what = `run: ${e.summary || ""}`; where = ""; st = `${e.status} (${e.reason})`;
    }
    const frame = e.frame_after || e.frame_before;
    body.append(el("tr", { "data-kind": e.kind, "data-operation": e.operation_id || null, title: frame ? `frame ${frame}` : null },
      el("td", {}, at), el("td", {}, what), el("td", {}, where), el("td", { class: `state-${e.state || ""}` }, st)));
  }
}

// --- Loop ---------------------------------------------------------------------------------

async function refresh() {
  try {
    const [tabs, approvals, log, waiting] = await Promise.all([
      api("/api/tabs").then((r) => r.json()), api("/api/approvals").then((r) => r.json()), api("/api/log?limit=100").then((r) => r.json()),
      api("/api/runs/waiting").then((r) => r.json()),
    ]);
    setConnected(true);
    renderLog(log.entries);
    state.tabs = tabs.tabs;
    renderResources(tabs.tabs);
    renderApprovals(approvals.pending, waiting.waiting);
    drawMarkers();
    if (state.selected && !tabs.tabs.some((tab) => tab.tab === state.selected && tab.state === "open")) { state.selected = null; closeView(); setEntry(false); frameLabel(); }
    follow();
    const url = document.getElementById("nav-url"), current = tabs.tabs.find((tab) => tab.tab === state.selected);
    if (view.entry && current && document.activeElement !== url) url.value = current.url || "";
    if (!state.pending) renderControl(tabs.tabs.find((tab) => tab.tab === state.selected));
  } catch (e) {
    setConnected(false);
  }
}

function start() {
  document.documentElement.lang = lang;
  document.querySelectorAll("[data-i18n]").forEach((n) => { n.textContent = t(n.dataset.i18n); });
  document.querySelectorAll("[data-i18n-title]").forEach((n) => { n.title = t(n.dataset.i18nTitle); n.setAttribute("aria-label", t(n.dataset.i18nTitle)); });
  document.getElementById("toggle-preview").addEventListener("click", togglePreview);
  document.getElementById("take-over").addEventListener("click", () => control("take-over"));
  document.getElementById("hand-back").addEventListener("click", () => control("hand-back"));
  document.getElementById("pin").addEventListener("click", togglePin);
  document.getElementById("show-actions").addEventListener("click", toggleActions);
  document.getElementById("open-page").addEventListener("click", () => setEntry(!view.entry));
  wireEntry();
  takeToken();
  if (!state.token) { document.getElementById("need-token").hidden = false; return; }
  refresh();
  setInterval(refresh, 1000);
  document.addEventListener("visibilitychange", syncCapture);
}

start();
