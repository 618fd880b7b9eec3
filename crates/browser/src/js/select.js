function (wanted) {
  const options = [...this.options];
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const match = options.find((o) => o.value === wanted) || options.find((o) => norm(o.label) === norm(wanted)) || options.find((o) => norm(o.textContent) === norm(wanted));
  if (!match) {
    const listed = options.slice(0, 20).map((o) => JSON.stringify(norm(o.label) || o.value)).join(', ');
    return { error: 'no option ' + JSON.stringify(wanted) + ' in this list; its options are: ' + listed + (options.length > 20 ? ', …' : '') };
  }
  if (match.disabled) return { error: 'option ' + JSON.stringify(norm(match.label)) + ' is disabled' };
  if (!this.multiple) this.value = match.value; else match.selected = true;
  this.dispatchEvent(new Event('input', { bubbles: true }));
  this.dispatchEvent(new Event('change', { bubbles: true }));
  return { value: this.value };
}