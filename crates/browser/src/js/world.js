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
  };
  const count = (records) => {
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
  };
  state.all = document.getElementsByTagName('*');
  state.dialogs = document.getElementsByTagName('dialog');
  // Which <dialog> (by document order) is open as modal, making the rest of the page inert; -1 if none.
  const modalDialog = () => {
    for (let i = 0; i < state.dialogs.length; i++) if (state.dialogs[i].matches(':modal')) return i;
    return -1;
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
    }
    return out;
  };
  globalThis.__glovebox = state;
})();
