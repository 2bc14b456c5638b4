// SPDX-License-Identifier: MIT
// The echo graph of the conformance contract (langgraph-server-api.md §0):
// __start__ -> echo -> __end__ over MessagesAnnotation. `echo` answers
// "echo: " + the content of the last human message; a content starting with
// "sleep:<ms>" waits that long first, and the wait ends (throwing, so the node
// writes nothing) as soon as the run is cancelled.
import { StateGraph, MessagesAnnotation, START, END } from "@langchain/langgraph";
import { AIMessage } from "@langchain/core/messages";

function messageType(m) {
  if (typeof m?.getType === "function") return m.getType();
  if (typeof m?._getType === "function") return m._getType();
  return m?.type;
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === "string" ? part : (part?.text ?? ""))).join("");
  }
  return "";
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new Error("Aborted"));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error("Aborted"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

async function echo(state, config) {
  const human = [...state.messages].reverse().find((m) => messageType(m) === "human");
  const c = human ? textOf(human.content) : "";
  const match = /^sleep:(\d+)/.exec(c);
  if (match) await sleep(Number(match[1]), config?.signal);
  return { messages: [new AIMessage({ content: "echo: " + c })] };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("echo", echo)
  .addEdge(START, "echo")
  .addEdge("echo", END)
  .compile();
