// Runs in Glovebox's isolated world with `this` = the target element. Reports what the
// actionability checks need that CDP does not say directly.
function (kind) {
  const el = this;
  const tag = (el.tagName || '').toLowerCase();
  const disabled = !!(el.disabled || (el.closest && el.closest('fieldset[disabled]') && !el.closest('legend')) || el.getAttribute('aria-disabled') === 'true');
  const editable = el.isContentEditable || ((tag === 'input' || tag === 'textarea') && !el.readOnly && !el.disabled);
  const inputType = tag === 'input' ? (el.type || 'text').toLowerCase() : '';
  // Only a control whose semantics promise a state a click changes has one to verify: a native
  // checkbox or radio, an ARIA checkbox, radio or switch, a toggle button (aria-pressed). A text
  // field's `checked` property is no such promise (issue 36: a date field's click was `failed`).
  const role = (el.getAttribute && el.getAttribute('role') || '').trim().toLowerCase();
  let toggle = null, checked = null;
  if (tag === 'input' && (inputType === 'checkbox' || inputType === 'radio')) {
    toggle = inputType; checked = !!el.checked;
  } else if (['checkbox', 'radio', 'switch', 'menuitemcheckbox', 'menuitemradio'].includes(role) && el.hasAttribute('aria-checked')) {
    toggle = role.endsWith('radio') ? 'radio' : 'checkbox'; checked = el.getAttribute('aria-checked') === 'true';
  } else if (el.hasAttribute && el.hasAttribute('aria-pressed') && (tag === 'button' || role === 'button')) {
    toggle = 'pressed'; checked = el.getAttribute('aria-pressed') === 'true';
  }
  return {
    connected: el.isConnected,
    tag,
    input_type: inputType,
    disabled,
    editable,
    multiple: !!el.multiple,
    value: el.isContentEditable ? el.innerText : (('value' in el) ? String(el.value) : null),
    toggle,
    checked,
    scroll_x: el.ownerDocument.defaultView ? el.ownerDocument.defaultView.scrollX : 0,
    scroll_y: el.ownerDocument.defaultView ? el.ownerDocument.defaultView.scrollY : 0,
  };
}
