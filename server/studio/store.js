// The store: namespaces as a tree, the items under one, search with a query and a filter.
import { call } from "./api.js";
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
    const ul = document.createElement("ul");
    for (const [part, children] of [...level.entries()].sort()) {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "namespace";
      button.textContent = part;
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
  $("namespaces").replaceChildren(namespaces.length ? list(root, []) : Object.assign(document.createElement("p"), { className: "empty", textContent: "The store is empty" }));
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
      const li = document.createElement("li");
      li.className = "item";
      const head = document.createElement("div");
      head.className = "item-head";
      const name = document.createElement("span");
      name.className = "item-key";
      name.textContent = [...item.namespace, item.key].join(" / ");
      head.append(name);
      if (item.score !== undefined && item.score !== null) {
        const score = document.createElement("span");
        score.className = "badge";
        score.textContent = `score ${Number(item.score).toFixed(3)}`;
        head.append(score);
      }
      const when = document.createElement("time");
      when.textContent = new Date(item.updated_at).toLocaleString();
      head.append(when);
      li.append(head, jsonTree(item.value));
      return li;
    }),
  );
  if (!items.length) $("items").append(Object.assign(document.createElement("li"), { className: "empty", textContent: "No items" }));
}
