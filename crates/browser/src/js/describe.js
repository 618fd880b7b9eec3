// Describes an element for an error message: `div#consent-banner "Accept cookies"`.
function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el) return 'an unknown node';
  let d = el.tagName.toLowerCase();
  if (el.id) d += '#' + el.id;
  else if (el.classList && el.classList.length) d += '.' + [...el.classList].slice(0, 2).join('.');
  const text = (el.getAttribute('aria-label') || el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim();
  if (text) d += ' "' + (text.length > 60 ? text.slice(0, 57) + '...' : text) + '"';
  return d;
}
