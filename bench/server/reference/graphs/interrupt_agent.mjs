// SPDX-License-Identifier: MIT
// One node `ask` that interrupts with {question: "what next?"} and, once resumed
// with a value v, answers "resumed: " + v (JSON-encoded unless a string).
import { StateGraph, MessagesAnnotation, START, END, interrupt } from "@langchain/langgraph";
import { AIMessage } from "@langchain/core/messages";

function ask() {
  const v = interrupt({ question: "what next?" });
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return { messages: [new AIMessage({ content: "resumed: " + text })] };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("ask", ask)
  .addEdge(START, "ask")
  .addEdge("ask", END)
  .compile();
