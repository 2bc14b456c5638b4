// SPDX-License-Identifier: MIT
// LangGraph.js's RemoteGraph (@langchain/langgraph/remote) against `stategraph serve`, in Node:
// invoke, stream (values and updates) and getState on a thread of the server, then the same
// RemoteGraph as the node of a LangGraph.js StateGraph (MessagesAnnotation) with a MemorySaver:
// the parent's turns, its state beside the server's thread, and its stream with the remote
// graph's updates and tokens as a subgraph's. Environment: lib.mjs.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { HumanMessage } from "@langchain/core/messages";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { RemoteGraph } from "@langchain/langgraph/remote";
import { assistant, client, expectedReply, key, modelStats, url } from "./lib.mjs";

const remote = new RemoteGraph({ graphId: assistant, url, apiKey: key });

/** A message, a class instance or a plain dict, as [type, content]. */
const pair = (m) => [typeof m.getType === "function" ? m.getType() : m.type, m.content];
const onThread = (threadId) => ({ configurable: { thread_id: threadId } });

/** Runs `call`; when the graph asked the model, checks that the model was asked about `text`. */
async function viaModel(text, call) {
  const before = (await modelStats()).requests;
  const result = await call();
  const stats = await modelStats();
  if (stats.requests > before) assert.equal(stats.lastMessages.at(-1)?.content, text, "the model's last message");
  return result;
}

test("RemoteGraph.invoke on a thread, twice; getState shows the server's thread", async () => {
  const threadId = randomUUID();
  const config = onThread(threadId);
  const first = "hello, remote graph";
  const out = await viaModel(first, () => remote.invoke({ messages: [new HumanMessage(first)] }, config));
  assert.deepEqual(out.messages.map(pair), [["human", first], ["ai", expectedReply(first)]]);
  // The run created the thread (if_not_exists) under the caller's thread id.
  assert.equal((await client.threads.get(threadId)).thread_id, threadId);
  // A second turn, as a plain dict with a role, continues the thread.
  const second = "and once more";
  const again = await viaModel(second, () => remote.invoke({ messages: [{ role: "user", content: second }] }, config));
  const turns = [["human", first], ["ai", expectedReply(first)], ["human", second], ["ai", expectedReply(second)]];
  assert.deepEqual(again.messages.map(pair), turns);
  assert.deepEqual(again.messages.slice(0, 2), out.messages); // the first turn kept as it was
  const state = await remote.getState(config);
  assert.deepEqual(state.values.messages.map(pair), turns);
  assert.deepEqual(state.values.messages, again.messages);
  assert.deepEqual(state.next, []);
  assert.equal(state.config.configurable.thread_id, threadId);
  assert.match(state.config.configurable.checkpoint_id, /\S/);
  assert.equal(state.parentConfig.configurable.thread_id, threadId);
  assert.equal(state.metadata.source, "loop");
  // getState at the parent checkpoint: one step earlier, without the last reply.
  const earlier = await remote.getState(state.parentConfig);
  assert.deepEqual(earlier.values.messages.map(pair), turns.slice(0, 3));
});

test("RemoteGraph.stream: values and updates together, and updates alone", async () => {
  const config = onThread(randomUUID());
  const text = "stream this";
  const reply = expectedReply(text);
  const chunks = [];
  await viaModel(text, async () => {
    for await (const chunk of await remote.stream({ messages: [new HumanMessage(text)] }, { ...config, streamMode: ["values", "updates"] })) {
      chunks.push(chunk);
    }
  });
  const values = chunks.filter(([mode]) => mode === "values").map(([, v]) => v.messages.map(pair));
  const updates = chunks.filter(([mode]) => mode === "updates").map(([, u]) => u);
  assert.equal(values.length + updates.length, chunks.length, `modes: ${chunks.map(([m]) => m)}`);
  assert.deepEqual(values[0], [["human", text]]); // the input, before any node
  assert.deepEqual(values.at(-1), [["human", text], ["ai", reply]]);
  // The update of the node that answered: only the new message.
  const answered = updates.flatMap((u) => Object.values(u)).filter((u) => u?.messages?.length);
  assert.deepEqual(answered.map((u) => u.messages.map(pair)), [[["ai", reply]]]);
  // One mode asked for: the chunks come bare, not as [mode, chunk].
  const text2 = "updates only";
  const bare = [];
  await viaModel(text2, async () => {
    for await (const chunk of await remote.stream({ messages: [new HumanMessage(text2)] }, { ...config, streamMode: "updates" })) {
      bare.push(chunk);
    }
  });
  const nodes = bare.flatMap((u) => Object.values(u)).filter((u) => u?.messages?.length);
  assert.deepEqual(nodes.map((u) => u.messages.map(pair)), [[["ai", expectedReply(text2)]]]);
  assert.deepEqual((await remote.getState(config)).values.messages.map(pair), [
    ["human", text],
    ["ai", reply],
    ["human", text2],
    ["ai", expectedReply(text2)],
  ]);
});

/** A LangGraph.js graph whose one node is the remote graph, checkpointed in memory. */
const parentGraph = () =>
  new StateGraph(MessagesAnnotation)
    .addNode("remote", remote)
    .addEdge(START, "remote")
    .addEdge("remote", END)
    .compile({ checkpointer: new MemorySaver() });

test("a StateGraph with the RemoteGraph as its node: two turns, its state and the server's agree", async () => {
  const parent = parentGraph();
  const threadId = randomUUID();
  const config = onThread(threadId);
  const one = "parent turn one";
  const two = "parent turn two";
  const out1 = await viaModel(one, () => parent.invoke({ messages: [new HumanMessage(one)] }, config));
  assert.deepEqual(out1.messages.map(pair), [["human", one], ["ai", expectedReply(one)]]);
  const out2 = await viaModel(two, () => parent.invoke({ messages: [new HumanMessage(two)] }, config));
  const turns = [["human", one], ["ai", expectedReply(one)], ["human", two], ["ai", expectedReply(two)]];
  // The server kept the ids of the messages the parent sent back: no message twice.
  assert.deepEqual(out2.messages.map(pair), turns);
  const mine = await parent.getState(config);
  assert.deepEqual(mine.values.messages.map(pair), turns);
  assert.deepEqual(mine.next, []);
  // The remote graph ran on the server's thread of the same id.
  const theirs = await remote.getState(config);
  assert.deepEqual(theirs.values.messages.map(pair), turns);
  assert.deepEqual(
    theirs.values.messages.map((m) => m.id),
    mine.values.messages.map((m) => m.id),
  );
});

test("the StateGraph streams the RemoteGraph's updates and tokens as a subgraph's", async () => {
  const parent = parentGraph();
  const config = onThread(randomUUID());
  const text = "stream through the parent";
  const reply = expectedReply(text);
  const chunks = [];
  await viaModel(text, async () => {
    const input = { messages: [new HumanMessage(text)] };
    for await (const chunk of await parent.stream(input, { ...config, streamMode: ["updates", "messages"], subgraphs: true })) {
      chunks.push(chunk);
    }
  });
  // The parent's own update: its node "remote" returned the remote graph's messages.
  const own = chunks.filter(([ns, mode]) => ns.length === 0 && mode === "updates").map(([, , u]) => u);
  assert.deepEqual(own.map((u) => Object.keys(u)), [["remote"]]);
  assert.deepEqual(own[0].remote.messages.map(pair), [["human", text], ["ai", reply]]);
  // The remote graph's events, under the namespace of the parent's node.
  const inner = chunks.filter(([ns]) => ns.length > 0);
  assert.ok(inner.length > 0, "no events of the remote graph");
  for (const [ns] of inner) assert.match(ns[0], /^remote:/);
  const innerUpdates = inner.filter(([, mode]) => mode === "updates").flatMap(([, , u]) => Object.values(u));
  assert.ok(innerUpdates.some((u) => u?.messages?.some((m) => m.type === "ai" && m.content === reply)), "no update with the reply");
  // Its messages events: the reply, token by token when the model streams it.
  const tokens = inner.filter(([, mode]) => mode === "messages").map(([, , [message]]) => message);
  const replyId = own[0].remote.messages[1].id;
  const ofReply = tokens.filter((m) => m.id === replyId);
  assert.ok(ofReply.length > 0, `no messages event of the reply ${replyId}: ${JSON.stringify(tokens)}`);
  assert.equal(ofReply.map((m) => m.content).join(""), reply);
});
