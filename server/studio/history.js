// SPDX-License-Identifier: MIT
// Time travel: a thread's checkpoints as a timeline, the state at one as a JSON tree with what
// changed since its parent, replay from it, fork from it (the state edited first, if wanted).
import { call } from "./api.js";
import { el } from "./dom.js";
import { changedPaths, jsonTree } from "./jsontree.js";

const $ = (id) => document.getElementById(id);
let hooks = null; // {thread(): id, run(body), fail(error)}
let snapshots = []; // newest first
let chosen = null;

/** `run(body)` starts a streamed run on the open thread with `body` merged in. */
export function initHistory(options) {
  hooks = options;
  $("replay").addEventListener("click", () => replay());
  $("fork").addEventListener("click", () => openEditor());
  $("fork-cancel").addEventListener("click", () => ($("fork-editor").hidden = true));
  $("fork-editor").addEventListener("submit", (event) => {
    event.preventDefault();
    fork();
  });
}

function nodesOf(index) {
  const snapshot = snapshots[index];
  const parent = snapshots[index + 1];
  if (snapshot.metadata?.source === "input") return "input";
  if (snapshot.metadata?.source === "update") return "update_state";
  if (snapshot.metadata?.source === "fork") return "fork";
  return parent?.next?.length ? parent.next.join(", ") : "—";
}

/** Loads the open thread's checkpoints (newest first) and shows the newest. */
export async function loadHistory() {
  const thread = hooks.thread();
  $("checkpoint-detail").hidden = true;
  if (!thread) {
    $("timeline").replaceChildren();
    return;
  }
  snapshots = await call("POST", `/threads/${encodeURIComponent(thread)}/history`, { limit: 200 });
  $("timeline").replaceChildren(
    ...snapshots.map((s, index) => {
      const button = el("button", "checkpoint-item");
      button.type = "button";
      button.dataset.checkpointId = s.checkpoint.checkpoint_id;
      button.append(
        el("span", "step", `step ${s.metadata?.step ?? "?"}`),
        el("span", "badge", s.metadata?.source ?? ""),
        el("span", "nodes", nodesOf(index)),
        el("time", "", s.created_at ? new Date(s.created_at).toLocaleTimeString() : ""),
      );
      button.addEventListener("click", () => choose(index));
      const item = el("li");
      item.append(button);
      return item;
    }),
  );
  if (snapshots.length) choose(0);
}

function choose(index) {
  chosen = snapshots[index];
  const parent = snapshots[index + 1];
  for (const b of document.querySelectorAll(".checkpoint-item")) {
    b.toggleAttribute("aria-current", b.dataset.checkpointId === chosen.checkpoint.checkpoint_id);
  }
  $("checkpoint-title").textContent = chosen.checkpoint.checkpoint_id;
  $("checkpoint-next").textContent = chosen.next?.length ? `next: ${chosen.next.join(", ")}` : "next: — (ended)";
  const changed = parent ? changedPaths(parent.values, chosen.values) : new Set();
  $("checkpoint-changes").textContent = parent
    ? `${[...changed].filter((p) => p.split("/").length === 2).map((p) => p.slice(1)).join(", ") || "nothing"} changed since its parent`
    : "the first checkpoint";
  $("checkpoint-state").replaceChildren(jsonTree(chosen.values, changed));
  $("checkpoint-detail").hidden = false;
  $("fork-editor").hidden = true;
}

function replay() {
  if (!chosen) return;
  hooks.run({ input: null, checkpoint_id: chosen.checkpoint.checkpoint_id });
}

function openEditor() {
  if (!chosen) return;
  $("fork-values").value = JSON.stringify(chosen.values, null, 2);
  $("fork-editor").hidden = false;
  $("fork-values").focus();
}

async function fork() {
  let edited;
  try {
    edited = JSON.parse($("fork-values").value);
  } catch (error) {
    hooks.fail(`The state is not valid JSON: ${error.message}`);
    return;
  }
  if (!edited || typeof edited !== "object" || Array.isArray(edited)) {
    hooks.fail("The state must be a JSON object");
    return;
  }
  // Only the keys that changed go to update_state (the graph's reducers apply them); none: a copy.
  const update = {};
  for (const [key, value] of Object.entries(edited)) {
    if (JSON.stringify(value) !== JSON.stringify(chosen.values[key])) update[key] = value;
  }
  const body = Object.keys(update).length
    ? { values: update, checkpoint_id: chosen.checkpoint.checkpoint_id }
    : { values: null, as_node: "__copy__", checkpoint_id: chosen.checkpoint.checkpoint_id };
  try {
    const saved = await call("POST", `/threads/${encodeURIComponent(hooks.thread())}/state`, body);
    $("fork-editor").hidden = true;
    hooks.run({ input: null, checkpoint_id: saved.checkpoint.checkpoint_id });
  } catch (error) {
    hooks.fail(error);
  }
}
