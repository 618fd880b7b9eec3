// Runs in Glovebox's isolated world with `this` = the target element. Reports what the
// actionability checks need that CDP does not say directly.
function (kind) {
  const el = this;
  const tag = (el.tagName || '').toLowerCase();
  const disabled = !!(el.disabled || (el.closest && el.closest('fieldset[disabled]') && !el.closest('legend')) || el.getAttribute('aria-disabled') === 'true');
  const editable = el.isContentEditable || ((tag === 'input' || tag === 'textarea') && !el.readOnly && !el.disabled);
  const inputType = tag === 'input' ? (el.type || 'text').toLowerCase() : '';
  return {
    connected: el.isConnected,
    tag,
    input_type: inputType,
    disabled,
    editable,
    multiple: !!el.multiple,
    value: el.isContentEditable ? el.innerText : (('value' in el) ? String(el.value) : null),
    checked: ('checked' in el) ? !!el.checked : null,
    scroll_x: el.ownerDocument.defaultView ? el.ownerDocument.defaultView.scrollX : 0,
    scroll_y: el.ownerDocument.defaultView ? el.ownerDocument.defaultView.scrollY : 0,
  };
}
