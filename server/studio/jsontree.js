// SPDX-License-Identifier: MIT
// A JSON value as a tree of <details>, with the paths that changed marked.
import { el } from "./dom.js";

/** The JSON-pointer paths where `after` differs from `before` (a changed container too). */
export function changedPaths(before, after, path = "", out = new Set()) {
  const bothObjects =
    before && after && typeof before === "object" && typeof after === "object" &&
    Array.isArray(before) === Array.isArray(after);
  if (!bothObjects) {
    if (JSON.stringify(before) !== JSON.stringify(after)) out.add(path);
    return out;
  }
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  let changed = false;
  for (const key of keys) {
    const size = out.size;
    changedPaths(before[key], after[key], `${path}/${key}`, out);
    changed ||= out.size > size;
  }
  if (changed) out.add(path);
  return out;
}

function leaf(value) {
  return el("span", `json-${value === null ? "null" : typeof value}`, JSON.stringify(value));
}

function node(key, value, path, changed, depth) {
  const isContainer = value && typeof value === "object";
  const mark = changed.has(path) ? " changed" : "";
  if (!isContainer) {
    const row = el("div", `json-row${mark}`);
    if (key !== null) row.append(el("span", "json-key", `${key}: `));
    row.append(leaf(value));
    return row;
  }
  const details = el("details", `json-node${mark}`);
  details.open = depth < 1 || changed.has(path);
  const entries = Object.entries(value);
  const size = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  details.append(el("summary", "", `${key === null ? "" : `${key}: `}${size}`));
  for (const [k, v] of entries) details.append(node(k, v, `${path}/${k}`, changed, depth + 1));
  return details;
}

/** A tree of `value`; paths in `changed` (changedPaths) are marked and open. */
export function jsonTree(value, changed = new Set()) {
  const root = el("div", "json-tree");
  root.append(node(null, value, "", changed, 0));
  return root;
}
