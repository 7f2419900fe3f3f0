// The one way the page makes elements: text goes in through textContent, never as HTML,
// so nothing a user types can become markup or script.

/** A new element: props set className, dataset entries or attributes; text is its textContent. */
export function el(tag, props = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "className") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  if (text !== null) node.textContent = text;
  return node;
}
