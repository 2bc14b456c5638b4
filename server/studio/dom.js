// SPDX-License-Identifier: MIT
// The one DOM helper of the studio's views.

/** A new `tag` element with `className` and, when given, `text` as its text (never as HTML). */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
