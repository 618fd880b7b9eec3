// The turn-start preview, computed in Glovebox's isolated world in one synchronous turn:
// title, origin, viewport-visible text in DOM order (whitespace folded), ARIA landmarks and a
// count of interactive elements. No refs, no hidden nodes, no iframe content, no screenshot.
(maxChars, maxLandmarks) => {
  const state = globalThis.__glovebox.read();
  const vw = window.innerWidth, vh = window.innerHeight;
  const hidden = (el) => {
    if (!el || el.nodeType !== 1) return false;
    if (el.closest('[aria-hidden="true"],[inert]')) return true;
    return typeof el.checkVisibility === 'function'
      ? !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })
      : false;
  };
  const inViewport = (r) => r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < vh && r.left < vw;
  let text = '';
  let textTruncated = false;
  let lastWasSpace = true;
  const range = document.createRange();
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'IFRAME', 'FRAME', 'OBJECT', 'SVG', 'HEAD']);
  const visitText = (node) => {
    const raw = node.nodeValue;
    if (!raw || !raw.trim()) return;
    if (hidden(node.parentElement)) return;
    range.selectNodeContents(node);
    const rects = range.getClientRects();
    let visible = false;
    for (const r of rects) { if (inViewport(r)) { visible = true; break; } }
    if (!visible) return;
    const folded = raw.replace(/\s+/g, ' ');
    const piece = lastWasSpace ? folded.replace(/^ /, '') : folded;
    text += piece;
    lastWasSpace = text.endsWith(' ');
    if ([...text].length > maxChars) textTruncated = true;
  };
  const walk = (node) => {
    if (textTruncated) return;
    if (node.nodeType === 3) { visitText(node); return; }
    if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) return;
    if (node.nodeType === 1) {
      if (SKIP.has(node.tagName.toUpperCase())) return;
      if (node.getAttribute('aria-hidden') === 'true') return;
      // Block boundaries become a space, so words of adjacent blocks do not run together.
      if (!lastWasSpace) { text += ' '; lastWasSpace = true; }
    }
    if (node.localName === 'slot') {
      for (const n of node.assignedNodes({ flatten: true })) walk(n);
      return;
    }
    const children = node.shadowRoot ? node.shadowRoot.childNodes : node.childNodes;
    for (const child of children) walk(child);
  };
  walk(document.body || document.documentElement);
  text = text.trim();

  const LANDMARK_TAGS = { HEADER: 'banner', NAV: 'navigation', MAIN: 'main', ASIDE: 'complementary', FOOTER: 'contentinfo', SEARCH: 'search' };
  const LANDMARK_ROLES = new Set(['banner', 'navigation', 'main', 'complementary', 'contentinfo', 'search', 'form', 'region']);
  const nameOf = (el) => {
    const label = el.getAttribute('aria-label');
    if (label && label.trim()) return label.trim();
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean).map((e) => e.textContent).join(' ');
      if (t.trim()) return t.replace(/\s+/g, ' ').trim();
    }
    return el.getAttribute('title') || '';
  };
  const landmarks = [];
  let landmarksTruncated = false;
  for (const el of document.querySelectorAll('header,nav,main,aside,footer,search,form,section,[role]')) {
    const explicit = el.getAttribute('role');
    let role = explicit && LANDMARK_ROLES.has(explicit) ? explicit : LANDMARK_TAGS[el.tagName];
    const name = nameOf(el);
    if (!role && (el.tagName === 'SECTION' || el.tagName === 'FORM') && name) role = el.tagName === 'FORM' ? 'form' : 'region';
    if (!role || ((role === 'form' || role === 'region') && !name)) continue;
    // header/footer are landmarks only outside sectioning content (HTML-AAM).
    if (!explicit && (el.tagName === 'HEADER' || el.tagName === 'FOOTER') && el.parentElement && el.parentElement.closest('article,aside,main,nav,section')) continue;
    if (hidden(el)) continue;
    landmarks.push({ role, name: name.replace(/\s+/g, ' ').trim() });
    // One past the limit lets the protocol's own cut set the flag.
    if (landmarks.length > maxLandmarks) { landmarksTruncated = true; break; }
  }
  const INTERACTIVE = 'a[href],button,input:not([type=hidden]),select,textarea,summary,[contenteditable=""],[contenteditable=true],' +
    '[role=button],[role=link],[role=checkbox],[role=radio],[role=switch],[role=tab],[role=menuitem],[role=option],' +
    '[role=treeitem],[role=combobox],[role=textbox],[role=slider],[role=spinbutton],[onclick],[tabindex]:not([tabindex="-1"])';
  let interactive = 0;
  for (const el of document.querySelectorAll(INTERACTIVE)) {
    if (!hidden(el)) interactive++;
  }
  return {
    state,
    title: document.title,
    origin: location.origin,
    text,
    text_truncated: textTruncated,
    landmarks,
    landmarks_truncated: landmarksTruncated,
    interactive_count: interactive,
  };
}
