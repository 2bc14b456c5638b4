// SPDX-License-Identifier: MIT
// stategraph studio: pick an assistant, see its graph, list threads, chat on one, watch a run.
import { ApiError, call, onKeyNeeded, setApiKey, stream, text } from "./api.js";
import { isHumanInterrupts, renderApprovals } from "./approvals.js";
import { appendChunk, appendHuman, renderMessages } from "./chat.js";
import { el } from "./dom.js";
import { initHistory, loadHistory } from "./history.js";
import { initStore, loadNamespaces } from "./store.js";
import { renderTimeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);

const ui = {
  assistant: $("assistant"),
  picture: $("picture"),
  runStatus: $("run-status"),
  search: $("thread-search"),
  status: $("thread-status"),
  threadList: $("thread-list"),
  title: $("thread-title"),
  badge: $("thread-badge"),
  chat: $("chat"),
  error: $("error"),
  message: $("message"),
  send: $("send"),
  cancel: $("cancel"),
  deleteThread: $("delete-thread"),
  interrupt: $("interrupt"),
  interruptValue: $("interrupt-value"),
  resumeValue: $("resume-value"),
  approvals: $("approvals"),
};

const state = {
  assistants: [],
  assistant: null, // the chosen assistant
  threads: [],
  thread: null, // the open thread's id
  run: null, // the run being streamed: {id}
};

// --- errors, theme, API key -------------------------------------------------------------------

function showError(error) {
  if (!error) {
    ui.error.hidden = true;
    return;
  }
  ui.error.textContent = error instanceof ApiError ? `${error.status}: ${error.detail}` : String(error);
  ui.error.hidden = false;
}

/** Runs an action; a failure is shown on the page, not thrown. */
async function guarded(action) {
  try {
    showError(null);
    await action();
  } catch (error) {
    showError(error);
  }
}

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  $("theme").textContent = theme === "dark" ? "Light" : "Dark";
  localStorage.setItem("stategraph-studio-theme", theme);
}

$("theme").addEventListener("click", () =>
  applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark"),
);
applyTheme(
  localStorage.getItem("stategraph-studio-theme") ??
    (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"),
);

function askForKey() {
  const dialog = $("key-dialog");
  const input = $("key-input");
  input.value = "";
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.close();
      resolve(value);
    };
    $("key-ok").onclick = (event) => {
      event.preventDefault();
      done(input.value.trim() || null);
    };
    $("key-cancel").onclick = () => done(null);
    dialog.oncancel = () => resolve(null);
    dialog.showModal();
    input.focus();
  });
}
onKeyNeeded(askForKey);
$("key").addEventListener("click", async () => {
  const key = await askForKey();
  if (key) {
    setApiKey(key);
    await guarded(loadAssistants);
  }
});

// --- assistants and the graph's picture -------------------------------------------------------

async function loadAssistants() {
  state.assistants = await call("POST", "/assistants/search", { limit: 100 });
  ui.assistant.replaceChildren(
    ...state.assistants.map((a) => {
      const option = el("option", "", a.name && a.name !== a.graph_id ? `${a.name} (${a.graph_id})` : a.graph_id);
      option.value = a.assistant_id;
      return option;
    }),
  );
  const wanted = new URLSearchParams(location.search).get("assistant");
  const chosen = state.assistants.find((a) => a.assistant_id === wanted || a.graph_id === wanted);
  if (chosen) ui.assistant.value = chosen.assistant_id;
  await chooseAssistant();
}

async function chooseAssistant() {
  state.assistant = state.assistants.find((a) => a.assistant_id === ui.assistant.value) ?? null;
  if (!state.thread) ui.message.disabled = ui.send.disabled = !canSend();
  ui.picture.replaceChildren();
  if (!state.assistant) return;
  let svg = "";
  try {
    svg = await text(`/assistants/${encodeURIComponent(state.assistant.assistant_id)}/graph?format=svg`);
  } catch (error) {
    // A server built without Graphviz has no pictures (501): its message stands in for one.
    ui.picture.append(el("p", "picture-missing", error.message));
  }
  const parsed = new DOMParser().parseFromString(svg || "<none/>", "image/svg+xml").documentElement;
  if (parsed.nodeName === "svg") {
    parsed.setAttribute("role", "img");
    parsed.setAttribute("aria-label", `The graph ${state.assistant.graph_id}`);
    ui.picture.append(document.importNode(parsed, true));
  }
  await loadThreads();
}
ui.assistant.addEventListener("change", () => guarded(chooseAssistant));

/** Marks `nodes` (names) as running in the picture. */
function highlight(nodes) {
  for (const g of ui.picture.querySelectorAll("g.node")) {
    const name = g.querySelector("title")?.textContent;
    g.classList.toggle("running", nodes.has(name));
  }
}

// --- threads ------------------------------------------------------------------------------------

async function loadThreads() {
  if (!state.assistant) return;
  const query = { limit: 100, metadata: { graph_id: state.assistant.graph_id } };
  if (ui.status.value) query.status = ui.status.value;
  state.threads = await call("POST", "/threads/search", query);
  renderThreads();
}

function renderThreads() {
  const words = ui.search.value.trim().toLowerCase();
  const shown = state.threads.filter(
    (t) => !words || JSON.stringify([t.thread_id, t.metadata, t.status]).toLowerCase().includes(words),
  );
  ui.threadList.replaceChildren(
    ...shown.map((t) => {
      const button = el("button", "thread-item");
      button.type = "button";
      button.dataset.threadId = t.thread_id;
      if (t.thread_id === state.thread) button.setAttribute("aria-current", "true");
      button.append(
        el("span", "thread-id", t.thread_id),
        el("span", `badge badge-${t.status}`, t.status),
        el("time", "", new Date(t.updated_at).toLocaleString()),
      );
      button.addEventListener("click", () => guarded(() => openThread(t.thread_id)));
      const item = el("li");
      item.append(button);
      return item;
    }),
  );
  if (shown.length === 0) {
    ui.threadList.append(el("li", "empty", state.threads.length ? "No thread matches" : "No threads yet"));
  }
}
ui.search.addEventListener("input", renderThreads);
ui.status.addEventListener("change", () => guarded(loadThreads));

/** Creates a thread of the selected assistant's graph and opens it. */
async function startThread() {
  // Nothing typed meanwhile goes to the thread open until now.
  ui.message.disabled = true;
  ui.send.disabled = true;
  let thread;
  try {
    thread = await call("POST", "/threads", {
      metadata: { graph_id: state.assistant.graph_id, assistant_id: state.assistant.assistant_id },
    });
  } finally {
    if (!thread) ui.message.disabled = ui.send.disabled = !canSend();
  }
  await loadThreads();
  await openThread(thread.thread_id);
}

/** Whether the composer takes a message: a run is not going on, and there is a thread to send it
 * to, or an assistant to start one with. */
function canSend() {
  return !state.run && Boolean(state.thread || state.assistant);
}

$("new-thread").addEventListener("click", () =>
  guarded(async () => {
    await startThread();
    ui.message.focus();
  }),
);

ui.deleteThread.addEventListener("click", () =>
  guarded(async () => {
    if (!state.thread || !confirm(`Delete thread ${state.thread}?`)) return;
    await call("DELETE", `/threads/${encodeURIComponent(state.thread)}`);
    state.thread = null;
    selectTab("chat");
    showThread(null, null);
    await loadThreads();
  }),
);

function showThread(thread, snapshot) {
  const open = Boolean(thread);
  ui.title.textContent = open ? thread.thread_id : "No thread selected";
  ui.badge.hidden = !open;
  if (open) {
    ui.badge.textContent = thread.status;
    ui.badge.className = `badge badge-${thread.status}`;
  }
  ui.deleteThread.disabled = !open;
  $("tab-history").disabled = !open;
  const busy = Boolean(state.run);
  ui.message.disabled = ui.send.disabled = !canSend();
  ui.cancel.hidden = !busy;
  renderMessages(ui.chat, snapshot?.values?.messages ?? []);
  const interrupts = (snapshot?.tasks ?? []).flatMap((t) => t.interrupts ?? []);
  const hidden = interrupts.length === 0 || busy || !$("history").hidden;
  // One interrupt asking for approvals (a list of HumanInterrupt requests): a card per request;
  // any other value: the value as JSON and the free-form resume field.
  const requests = interrupts.length === 1 && isHumanInterrupts(interrupts[0].value) ? interrupts[0].value : null;
  ui.interrupt.hidden = hidden || Boolean(requests);
  ui.approvals.hidden = hidden || !requests;
  ui.interruptValue.textContent = interrupts.map((i) => JSON.stringify(i.value, null, 2)).join("\n");
  if (requests) renderApprovals(ui.approvals, requests, { submit: resume, fail: showError });
  else ui.approvals.replaceChildren();
}

async function openThread(threadId) {
  state.thread = threadId;
  const path = `/threads/${encodeURIComponent(threadId)}`;
  const [thread, snapshot] = await Promise.all([call("GET", path), call("GET", `${path}/state`)]);
  if (state.thread !== threadId) return; // another thread was opened meanwhile
  showThread(thread, snapshot);
  renderThreads();
  if (!$("history").hidden) await loadHistory();
}

// --- runs ---------------------------------------------------------------------------------------

async function runOnThread(body) {
  const threadId = state.thread;
  const run = { id: null, thread: threadId };
  state.run = run;
  ui.runStatus.textContent = "Starting…";
  showThreadBusy();
  const running = new Set();
  try {
    await stream(
      `/threads/${encodeURIComponent(threadId)}/runs/stream`,
      {
        assistant_id: state.assistant.assistant_id,
        stream_mode: ["values", "messages-tuple", "tasks"],
        ...body,
      },
      (name, data) => {
        if (name === "metadata") {
          run.id = data.run_id;
          ui.runStatus.textContent = `Run ${data.run_id}`;
        } else if (name === "tasks" || name.startsWith("tasks|")) {
          if ("result" in data || "error" in data || "interrupts" in data) running.delete(data.name);
          else running.add(data.name);
          highlight(running);
          ui.runStatus.textContent = running.size ? `Running ${[...running].join(", ")}` : "Between steps";
        } else if (name === "messages" || name.startsWith("messages|")) {
          const [chunk] = data;
          if (chunk?.type === "AIMessageChunk" || chunk?.type === "ai") appendChunk(ui.chat, chunk);
        } else if (name === "values") {
          renderMessages(ui.chat, data.messages ?? []);
        } else if (name === "error") {
          showError(`The run failed: ${data.message ?? JSON.stringify(data)}`);
        }
      },
    );
  } finally {
    state.run = null;
    highlight(new Set());
    ui.runStatus.textContent = "No run";
    if (state.thread === threadId) await openThread(threadId);
    await loadThreads();
    if (run.id && state.thread === threadId) await showTimeline(threadId, run.id);
  }
}

/** The timeline of run `runId` of `threadId`, under the graph. */
async function showTimeline(threadId, runId) {
  const spans = await call(
    "GET",
    `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/spans`,
  );
  renderTimeline($("spans"), spans);
  $("run-timeline").hidden = spans.length === 0;
}

function showThreadBusy() {
  ui.message.disabled = true;
  ui.send.disabled = true;
  ui.cancel.hidden = false;
  ui.interrupt.hidden = true;
  ui.approvals.hidden = true;
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const content = ui.message.value.trim();
  if (!content || !canSend()) return;
  ui.message.value = "";
  guarded(async () => {
    if (!state.thread) await startThread(); // a first message starts a thread
    appendHuman(ui.chat, content);
    await runOnThread({ input: { messages: [{ type: "human", content }] } });
  });
});
ui.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});

ui.cancel.addEventListener("click", () =>
  guarded(async () => {
    if (!state.run?.id) return;
    ui.runStatus.textContent = "Cancelling…";
    const { thread, id } = state.run;
    await call("POST", `/threads/${encodeURIComponent(thread)}/runs/${id}/cancel?action=interrupt`);
  }),
);

ui.interrupt.addEventListener("submit", (event) => {
  event.preventDefault();
  const raw = ui.resumeValue.value.trim();
  let value = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // plain text
  }
  ui.resumeValue.value = "";
  resume(value);
});

/** Resumes the open thread's interrupt with `value` (the free-form field's, or the approvals'). */
function resume(value) {
  guarded(() => runOnThread({ command: { resume: value } }));
}

// --- views and tabs ----------------------------------------------------------------------------

function selectTab(tab, reload = true) {
  const history = tab === "history";
  $("tab-chat").setAttribute("aria-selected", String(!history));
  $("tab-history").setAttribute("aria-selected", String(history));
  $("history").hidden = !history;
  ui.chat.hidden = history;
  $("composer").hidden = history;
  if (history) {
    ui.interrupt.hidden = true;
    ui.approvals.hidden = true;
    guarded(loadHistory);
  } else if (state.thread && reload) {
    guarded(() => openThread(state.thread));
  }
}
$("tab-chat").addEventListener("click", () => selectTab("chat"));
$("tab-history").addEventListener("click", () => selectTab("history"));

function selectView(view) {
  const store = view === "store";
  $("view-threads").setAttribute("aria-selected", String(!store));
  $("view-store").setAttribute("aria-selected", String(store));
  $("threads-view").hidden = store;
  $("store-view").hidden = !store;
  if (store) guarded(loadNamespaces);
}
$("view-threads").addEventListener("click", () => selectView("threads"));
$("view-store").addEventListener("click", () => selectView("store"));

initHistory({
  thread: () => state.thread,
  run: (body) => {
    selectTab("chat", false);
    guarded(() => runOnThread(body));
  },
  fail: showError,
});
initStore({ fail: showError });

// --- keyboard -----------------------------------------------------------------------------------

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement?.tagName);
  if (event.key === "/" && !typing) {
    event.preventDefault();
    ui.search.focus();
  }
  if (event.key === "Escape" && state.run) ui.cancel.click();
});

guarded(loadAssistants);
