// Installed in Glovebox's isolated world ("glovebox") of every frame. Page scripts cannot see it.
// It counts DOM mutations by kind so the runtime can tell a structural change (elements added or
// removed, semantic attributes) from a text tick or a style change, and it reads the frame's
// state in one synchronous turn, so the values can never come from two different moments.
(() => {
  if (globalThis.__glovebox) return;
  const SEMANTIC = new Set(['id', 'role', 'href', 'disabled', 'hidden', 'type', 'name', 'value', 'checked',
    'selected', 'open', 'tabindex', 'contenteditable', 'for', 'src', 'alt', 'title', 'placeholder', 'inert',
    'multiple', 'readonly', 'required', 'label', 'action', 'method', 'data-testid']);
  const state = {
    // The document's identity must be the same in every instance of this world: a re-attached
    // tab gets a new one (worlds belong to a DevTools session), and a frame observed before the
    // detach must still match the page after it. `timeOrigin` is the document's own start
    // time, one value per document, read-only and the same in every world.
    doc: 'd' + performance.timeOrigin.toString(36),
    structural: 0,
    text: 0,
    visual: 0,
    // When (performance.now()) the last structural change was counted.
    structuralAt: -1,
  };
  const count = (records) => {
    const before = state.structural;
    for (const r of records) {
      if (r.type === 'characterData') { state.text++; continue; }
      if (r.type === 'attributes') {
        const a = r.attributeName || '';
        if (SEMANTIC.has(a) || a.startsWith('aria-')) state.structural++; else state.visual++;
        continue;
      }
      let element = false;
      for (const n of r.addedNodes) { if (n.nodeType === 1) { element = true; break; } }
      if (!element) for (const n of r.removedNodes) { if (n.nodeType === 1) { element = true; break; } }
      if (element) state.structural++; else state.text++;
    }
    if (state.structural !== before) state.structuralAt = performance.now();
  };
  state.all = document.getElementsByTagName('*');
  state.dialogs = document.getElementsByTagName('dialog');
  // Which <dialog> (by document order) is open as modal, making the rest of the page inert; -1 if none.
  const modalDialog = () => {
    for (let i = 0; i < state.dialogs.length; i++) if (state.dialogs[i].matches(':modal')) return i;
    return -1;
  };
  // Elements a `:hover` or `:active` rule gives a pointer cursor (`.prev:hover{cursor:pointer}`):
  // what a person finds clickable by pointing at it, though its computed cursor (not hovered)
  // says nothing. The rules are read again only when the style sheets change; the elements they
  // match, on every observation. Cross-origin sheets cannot be read and are skipped.
  const POINTER_MAX = 2000;
  state.sheets = { key: '', selectors: [] };
  const topLevel = (text) => {
    const parts = [];
    let depth = 0, start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '(' || c === '[') depth++;
      else if (c === ')' || c === ']') depth--;
      else if (c === ',' && depth === 0) { parts.push(text.slice(start, i)); start = i + 1; }
    }
    parts.push(text.slice(start));
    return parts;
  };
  const hoverSelectors = () => {
    const sheets = document.styleSheets;
    let key = '';
    for (let i = 0; i < sheets.length; i++) {
      try { key += sheets[i].cssRules.length + ','; } catch (e) { key += 'x,'; }
    }
    if (key === state.sheets.key) return state.sheets.selectors;
    const found = new Set();
    const visit = (rules, depth) => {
      if (!rules || depth > 8) return;
      for (const rule of rules) {
        if (rule.selectorText !== undefined && rule.style && rule.style.cursor === 'pointer'
            && /:(hover|active)/.test(rule.selectorText)) {
          for (const one of topLevel(rule.selectorText)) {
            if (!/:(hover|active)/.test(one)) continue;
            const plain = one.replace(/::?(before|after|marker|placeholder|selection)\b/g, '')
              .replace(/:(hover|active|focus-visible|focus-within|focus)\b/g, '').trim();
            if (plain && !/[>+~]$/.test(plain)) found.add(plain);
          }
        }
        if (rule.cssRules) visit(rule.cssRules, depth + 1);
      }
    };
    for (let i = 0; i < sheets.length; i++) {
      try { visit(sheets[i].cssRules, 0); } catch (e) { /* cross-origin */ }
    }
    state.sheets = { key, selectors: [...found] };
    return state.sheets.selectors;
  };
  const hoverPointer = () => {
    const selectors = hoverSelectors();
    if (selectors.length === 0) return [];
    const hit = new Set();
    for (const s of selectors) {
      let matched;
      try { matched = document.querySelectorAll(s); } catch (e) { continue; }
      for (const el of matched) {
        hit.add(el);
        if (hit.size >= POINTER_MAX) break;
      }
      if (hit.size >= POINTER_MAX) break;
    }
    const out = [];
    for (let i = 0; i < state.all.length && out.length < hit.size; i++) {
      if (hit.has(state.all[i])) out.push(i);
    }
    return out;
  };
  const observer = new MutationObserver(count);
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  // Called before the session detaches: the world outlives its session, its observer need not.
  state.stop = () => observer.disconnect();
  state.read = (facts) => {
    // Records queued in this same task have not been delivered yet; count them now.
    count(observer.takeRecords());
    const vv = window.visualViewport;
    const out = {
      doc: state.doc,
      structural: state.structural,
      text: state.text,
      visual: state.visual,
      url: location.href,
      title: document.title,
      ready: document.readyState,
      hidden: document.visibilityState === 'hidden',
      width: window.innerWidth,
      height: window.innerHeight,
      dpr: window.devicePixelRatio,
      scroll_x: window.scrollX,
      scroll_y: window.scrollY,
      scale: vv ? vv.scale : 1,
    };
    if (facts) {
      // For an observation's first read only (not every settle probe): which page model the
      // capture uses (`synth.rs`), and what the DOM model cannot read from the snapshot.
      out.elements = state.all.length;
      // ARIA relations that rebuild the tree or move focus, which only Chromium's AX tree models.
      out.aria_relations = document.querySelector('[aria-owns], [aria-activedescendant]') !== null;
      // Whether the page has or had scripts of its own (delegated handlers need one): a
      // `<script>` element, or a script file it loaded (loaders remove their elements).
      out.scripts = document.scripts.length > 0
        || performance.getEntriesByType('resource').some((r) => r.initiatorType === 'script');
      out.modal_dialog = modalDialog();
      // The focused element's index among the document's elements (document order), or -1.
      out.focused = document.activeElement && document.activeElement !== document.body
        ? Array.prototype.indexOf.call(state.all, document.activeElement) : -1;
      // How much of the viewport visible canvases cover (0..1): what only an image shows.
      let covered = 0;
      const area = Math.max(1, window.innerWidth * window.innerHeight);
      for (const c of document.getElementsByTagName('canvas')) {
        const r = c.getBoundingClientRect();
        const w = Math.max(0, Math.min(r.right, window.innerWidth) - Math.max(r.left, 0));
        const h = Math.max(0, Math.min(r.bottom, window.innerHeight) - Math.max(r.top, 0));
        covered += w * h;
      }
      out.canvas_share = Math.min(1, covered / area);
      // Elements (indices in document order) a hover rule gives a pointer cursor.
      out.hover_pointer = hoverPointer();
      // A page that went on building itself after its load event (a script adding rows on
      // timers): how long ago it loaded and last changed its structure after that, in ms (-1:
      // not loaded, or no structural change since). The load handlers' own changes come before
      // `loadEventEnd` and do not count.
      const nav = performance.getEntriesByType('navigation')[0];
      const loaded = nav && nav.loadEventEnd > 0 ? nav.loadEventEnd : -1;
      const now = performance.now();
      out.since_load_ms = loaded < 0 ? -1 : now - loaded;
      out.since_built_ms = loaded < 0 || state.structuralAt <= loaded ? -1 : now - state.structuralAt;
    }
    return out;
  };
  globalThis.__glovebox = state;
})();
