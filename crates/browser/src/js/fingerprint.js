function() {
  let text = (this.textContent || '').replace(/[\t\n\f\r ]+/g, ' ');
  if (text.startsWith(' ')) text = text.slice(1);
  if (text.endsWith(' ')) text = text.slice(0, -1);
  let clipped = '';
  let units = 0;
  for (const c of text) { units += c.length; if (units > 200) break; clipped += c; }
  return [this.localName, this.getAttribute('role') || '', this.getAttribute('aria-label') || '', clipped].join('\u0001');
}