function (wanted) {
  const options = [...this.options];
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const find = (w) => options.find((o) => o.value === w) || options.find((o) => norm(o.label) === norm(w)) || options.find((o) => norm(o.textContent) === norm(w));
  const missing = wanted.filter((w) => !find(w));
  if (missing.length) {
    const listed = options.slice(0, 20).map((o) => JSON.stringify(norm(o.label) || o.value)).join(', ');
    return { error: 'no option ' + missing.map((m) => JSON.stringify(m)).join(', ') + ' in this list; its options are: ' + listed + (options.length > 20 ? ', …' : '') };
  }
  const chosen = wanted.map(find);
  const disabled = chosen.filter((o) => o.disabled);
  if (disabled.length) return { error: 'option ' + disabled.map((o) => JSON.stringify(norm(o.label))).join(', ') + ' is disabled' };
  for (const o of options) o.selected = chosen.includes(o);
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return { values: chosen.map((o) => o.value) };
}