// SPDX-License-Identifier: MIT
// The store: namespaces as a tree, the items under one, search with a query and a filter.
import { call } from "./api.js";
import { el } from "./dom.js";
import { jsonTree } from "./jsontree.js";

const $ = (id) => document.getElementById(id);
let prefix = []; // the chosen namespace
let fail = () => {};

export function initStore(options) {
  fail = options.fail;
  $("store-search").addEventListener("submit", (event) => {
    event.preventDefault();
    search().catch(fail);
  });
}

/** The namespaces as nested lists: each level a button that chooses that prefix. */
export async function loadNamespaces() {
  const { namespaces } = await call("POST", "/store/namespaces", { limit: 1000 });
  const root = new Map();
  for (const namespace of namespaces) {
    let level = root;
    for (const part of namespace) {
      if (!level.has(part)) level.set(part, new Map());
      level = level.get(part);
    }
  }
  const list = (level, path) => {
    const ul = el("ul");
    for (const [part, children] of [...level.entries()].sort()) {
      const li = el("li");
      const button = el("button", "namespace", part);
      button.type = "button";
      const full = [...path, part];
      button.dataset.namespace = JSON.stringify(full);
      button.addEventListener("click", () => {
        prefix = full;
        for (const b of document.querySelectorAll(".namespace")) {
          b.toggleAttribute("aria-current", b.dataset.namespace === button.dataset.namespace);
        }
        search().catch(fail);
      });
      li.append(button);
      if (children.size) li.append(list(children, full));
      ul.append(li);
    }
    return ul;
  };
  $("namespaces").replaceChildren(namespaces.length ? list(root, []) : el("p", "empty", "The store is empty"));
  await search();
}

async function search() {
  const body = { namespace_prefix: prefix, limit: 50 };
  const query = $("store-query").value.trim();
  if (query) body.query = query;
  const filter = $("store-filter").value.trim();
  if (filter) {
    try {
      body.filter = JSON.parse(filter);
    } catch (error) {
      throw new Error(`The filter is not valid JSON: ${error.message}`);
    }
  }
  $("store-prefix").textContent = prefix.length ? prefix.join(" / ") : "all namespaces";
  const { items } = await call("POST", "/store/items/search", body);
  $("items").replaceChildren(
    ...items.map((item) => {
      const head = el("div", "item-head");
      head.append(el("span", "item-key", [...item.namespace, item.key].join(" / ")));
      if (item.score !== undefined && item.score !== null) {
        head.append(el("span", "badge", `score ${Number(item.score).toFixed(3)}`));
      }
      head.append(el("time", "", new Date(item.updated_at).toLocaleString()));
      const li = el("li", "item");
      li.append(head, jsonTree(item.value));
      return li;
    }),
  );
  if (!items.length) $("items").append(el("li", "empty", "No items"));
}
