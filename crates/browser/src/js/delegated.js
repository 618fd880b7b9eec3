// Evaluated in the page's own (main) world, where the page's jQuery keeps its handlers: which
// elements a delegated click handler serves (`$(list).on('click', 'li', …)`). Such elements
// have no listener of their own, so nothing else shows they are controls. The answer is a hint
// for which elements get refs, nothing more: the page controls this world and may answer
// anything, which can only add or leave out refs, as its own listeners could. Elements whose
// every jQuery click handler is delegated are reported too: they only pass clicks on.
(() => {
  const jq = window.jQuery;
  if (typeof jq !== 'function' || typeof jq._data !== 'function') return null;
  const TYPES = ['click', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'dblclick', 'touchstart'];
  const MAX = 2000;
  const all = document.getElementsByTagName('*');
  const hit = new Set();
  const passing = new Set();
  const serve = (host) => {
    let events;
    try { events = jq._data(host, 'events'); } catch (e) { return; }
    if (!events) return;
    for (const type of TYPES) {
      const handlers = events[type];
      if (!handlers || !handlers.delegateCount) continue;
      if (type === 'click' && handlers.delegateCount === handlers.length && host !== document) passing.add(host);
      for (let i = 0; i < handlers.delegateCount && hit.size < MAX; i++) {
        const selector = handlers[i] && handlers[i].selector;
        if (typeof selector !== 'string' || !selector) continue;
        let matched;
        try { matched = jq(host).find(selector); } catch (e) { continue; }
        // A selector that takes in most of the page (`*`, `div`) names no control.
        if (matched.length > 500) continue;
        for (let k = 0; k < matched.length && hit.size < MAX; k++) hit.add(matched[k]);
      }
    }
  };
  serve(document);
  for (let i = 0; i < all.length; i++) serve(all[i]);
  const targets = [], hosts = [];
  for (let i = 0; i < all.length; i++) {
    if (hit.has(all[i])) targets.push(i);
    else if (passing.has(all[i])) hosts.push(i);
  }
  return { targets, hosts };
})()
