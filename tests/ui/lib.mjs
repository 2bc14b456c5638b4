// SPDX-License-Identifier: MIT
// What both UI tests share: the server under test, what its graph answers, the loopback model's
// record of what it was asked, and a poll helper.
//   UI_URL, UI_API_KEY   the `stategraph serve` under test and its key
//   UI_MODEL_URL         the loopback model (model-server.mjs) the server talks to
//   UI_ASSISTANT_ID      the graph to talk to (default react_agent, the built-in graph that asks
//                        the model; the built-in `agent` answers without one)
//   UI_REPLY_PREFIX      what the graph puts before the user's text in its reply (default the
//                        loopback model's "You said: "; "echo: " for the built-in `agent`)
//   UI_SLOW_INPUT        a message the graph answers slowly, for stop() (default one the model
//                        answers slowly; "sleep:30000" for `agent`; empty: skip that test)
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

export const url = process.env.UI_URL;
export const key = process.env.UI_API_KEY;
export const assistant = process.env.UI_ASSISTANT_ID || "react_agent";
export const replyPrefix = process.env.UI_REPLY_PREFIX ?? "You said: ";
export const slowInput = process.env.UI_SLOW_INPUT ?? "answer slowly please";
assert.ok(url && key && process.env.UI_MODEL_URL, "UI_URL, UI_API_KEY and UI_MODEL_URL are needed");

/** The graph's answer to `text`. */
export const expectedReply = (text) => `${replyPrefix}${text}`;

/** An SDK client of the server, to check from Node what the clients under test left there. */
export const client = new Client({ apiUrl: url, apiKey: key });

/** What the loopback model saw: { requests, lastMessages, abandoned }. */
export async function modelStats() {
  const response = await fetch(`${process.env.UI_MODEL_URL}/stats`);
  return response.json();
}

/** Calls fn() every 100 ms until pred(value) holds; fails with the last value after `timeout` ms. */
export async function poll(what, fn, pred, timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await fn();
    if (pred(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
