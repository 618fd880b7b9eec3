// Shared by the eval's apps: each sends what the user did to its server as one JSON object with
// a `form`, which the harness judges the attempt by (the page never learns whether it "passed").
window.gb = {
  async submit(form, fields, query) {
    try {
      const r = await fetch('/submit' + (query ? '?' + query : ''), {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(Object.assign({ form }, fields)),
      });
      return r.ok;
    } catch (e) { return false; }
  },
  param(name) { return new URLSearchParams(location.search).get(name); },
  list(name, fallback) { const v = this.param(name); return v === null ? fallback : v.split(',').filter(Boolean); },
};
