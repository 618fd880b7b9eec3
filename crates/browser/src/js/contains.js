// True when `hit` is this element or inside it, across shadow roots.
function (hit) {
  let n = hit;
  while (n) {
    if (n === this) return true;
    n = n.parentNode || (n instanceof ShadowRoot ? n.host : null);
  }
  return false;
}
