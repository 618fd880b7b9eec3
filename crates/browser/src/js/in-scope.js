function (doc) {
  if (this.ownerDocument !== doc) return false;
  const el = this.nodeType === 1 ? this : this.parentElement;
  return !!el && (el.checkVisibility ? el.checkVisibility({ checkVisibilityCSS: true }) : el.getClientRects().length > 0);
}