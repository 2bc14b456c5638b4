// SPDX-License-Identifier: MIT
// The conversation of a thread as a chat: messages by type, tool calls and tool results folded,
// and the reply being streamed token by token.

import { el } from "./dom.js";

/** A message's content as text (a string, or an array of parts). */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : part?.text ?? JSON.stringify(part)))
      .join("");
  }
  return content === undefined || content === null ? "" : JSON.stringify(content);
}

const WHO = { human: "You", ai: "Assistant", tool: "Tool", system: "System" };

function typeOf(message) {
  const type = message.type ?? message.role ?? "ai";
  if (type === "AIMessageChunk" || type === "assistant") return "ai";
  if (type === "user") return "human";
  return type;
}

function folded(summary, body) {
  const details = el("details", "fold");
  details.append(el("summary", "", summary), el("pre", "", body));
  return details;
}

function messageItem(message) {
  const type = typeOf(message);
  const item = el("li", `msg msg-${type}`);
  item.dataset.id = message.id ?? "";
  item.append(el("div", "who", WHO[type] ?? type));
  const text = contentText(message.content);
  if (type === "tool") {
    item.append(folded(`Result of ${message.name ?? "a tool"}`, text));
    return item;
  }
  if (text) item.append(el("div", "text", text));
  for (const call of message.tool_calls ?? []) {
    item.append(folded(`Calls ${call.name}`, JSON.stringify(call.args ?? {}, null, 2)));
  }
  return item;
}

/** Shows `messages` (a state's `messages`) in `list`. */
export function renderMessages(list, messages) {
  list.replaceChildren(...(messages ?? []).map(messageItem));
  list.lastElementChild?.scrollIntoView({ block: "end" });
}

/** Appends a streamed chunk to its message (made on its first chunk). */
export function appendChunk(list, chunk) {
  const id = chunk.id ?? "streaming";
  let item = [...list.children].find((child) => child.dataset.id === id);
  if (!item) {
    item = messageItem({ ...chunk, content: "", tool_calls: [] });
    item.classList.add("streaming");
    list.append(item);
  }
  let text = item.querySelector(".text");
  if (!text) {
    text = el("div", "text");
    item.append(text);
  }
  text.textContent += contentText(chunk.content);
  item.scrollIntoView({ block: "end" });
}

/** Shows a human message at once, before the run's state has it. */
export function appendHuman(list, content) {
  const item = messageItem({ type: "human", content });
  list.append(item);
  item.scrollIntoView({ block: "end" });
}
