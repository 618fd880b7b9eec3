function (spec) {
  const fold = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const matches = (have) => {
    const h = fold(have), w = fold(spec.text);
    return spec.exact ? h === w : h.toLowerCase().includes(w.toLowerCase());
  };
  const visible = (el) => el.checkVisibility ? el.checkVisibility({ checkVisibilityCSS: true }) : el.getClientRects().length > 0;
  const all = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      all.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(this);
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'TITLE', 'META', 'LINK']);
  const own = (el) => {
    if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) return el.value;
    return el.innerText !== undefined ? el.innerText : el.textContent;
  };
  const labelText = (label) => {
    const copy = label.cloneNode(true);
    copy.querySelectorAll('input, select, textarea, button').forEach((c) => c.remove());
    return copy.textContent;
  };
  const labels = (el) => {
    const out = [];
    if (el.hasAttribute('aria-label')) out.push(el.getAttribute('aria-label'));
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const root = el.getRootNode();
      out.push(by.split(/\s+/).map((id) => { const t = root.getElementById ? root.getElementById(id) : null; return t ? t.textContent : ''; }).join(' '));
    }
    if (el.labels) for (const l of el.labels) out.push(labelText(l));
    return out;
  };
  const isFrame = (el) => el.tagName === 'IFRAME' || el.tagName === 'FRAME';
  let found;
  switch (spec.kind) {
    case 'test_id': found = all.filter((el) => el.getAttribute('data-testid') === spec.id); break;
    case 'label': found = all.filter((el) => labels(el).some(matches)); break;
    case 'text': {
      const hits = new Set(all.filter((el) => !skip.has(el.tagName) && matches(own(el))));
      // The innermost: an element none of whose child elements matches on its own.
      found = all.filter((el) => hits.has(el) && ![...el.children].some((c) => hits.has(c)));
      break;
    }
    case 'frame_title': found = all.filter((el) => isFrame(el) && matches(el.getAttribute('title'))); break;
    case 'frame_test_id': found = all.filter((el) => isFrame(el) && el.getAttribute('data-testid') === spec.id); break;
    default: found = [];
  }
  return found.filter(visible);
}