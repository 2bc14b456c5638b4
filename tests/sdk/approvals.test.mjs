// SPDX-License-Identifier: MIT
// Tool-call approvals through the server with the official JS SDK: the built-in approval_agent
// (create_agent with human_in_the_loop_middleware, docs/agents.md) interrupts with LangGraph's
// HumanInterrupt requests, which a client inspects and answers with HumanResponse values:
// accept, edit, respond and ignore; a response the tool's config does not allow fails the run
// and leaves the interrupt waiting for a good one.
//   LG_API_URL  the server under test (tests/sdk/run-against-serve.sh starts one)
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const API_URL = (process.env.LG_API_URL ?? "").replace(/\/+$/, "");
if (!API_URL) throw new Error("LG_API_URL is required");
const GRAPH = "approval_agent";
const client = new Client({ apiUrl: API_URL });
const TEST_TIMEOUT = 60_000;

const human = (content) => ({ messages: [{ role: "user", content }] });
const last = (values) => values.messages[values.messages.length - 1];

// A thread whose run stopped for a review of get_weather(city), with what the SDK shows of it.
async function pausedThread(city) {
  const thread = await client.threads.create();
  const result = await client.runs.wait(thread.thread_id, GRAPH, {
    input: human(`get_weather ${city}`),
  });
  return { thread, result };
}

const resume = (thread, value) =>
  client.runs.wait(thread.thread_id, GRAPH, { command: { resume: value } });

describe("approvals through the server (approval_agent)", { timeout: TEST_TIMEOUT }, () => {
  it("a reviewed call interrupts with a list of HumanInterrupt requests", async () => {
    const { thread, result } = await pausedThread("Paris");
    assert.equal(result.__interrupt__.length, 1);
    const requests = result.__interrupt__[0].value;
    assert.deepEqual(requests, [
      {
        action_request: { action: "get_weather", args: { city: "Paris" } },
        config: { allow_ignore: true, allow_respond: true, allow_edit: true, allow_accept: true },
        description: 'Tool execution requires approval\n\nTool: get_weather\nArgs: {"city":"Paris"}',
      },
    ]);
    assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(state.next, ["HumanInTheLoopMiddleware.after_model"]);
    assert.deepEqual(state.tasks[0].interrupts[0].value, requests);
    const ai = last(state.values);
    assert.equal(ai.type, "ai");
    assert.deepEqual(
      ai.tool_calls.map((c) => [c.name, c.args]),
      [["get_weather", { city: "Paris" }]],
    );
  });

  it("accept runs the call; the agent answers with its result", async () => {
    const { thread } = await pausedThread("Paris");
    const values = await resume(thread, [{ type: "accept", args: null }]);
    const tool = values.messages.find((m) => m.type === "tool");
    assert.equal(tool.content, "Sunny, 21 C in Paris");
    assert.equal(last(values).type, "ai");
    assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
  });

  it("edit runs the call with the reviewer's arguments, the AI message edited in place", async () => {
    const { thread } = await pausedThread("Paris");
    const before = await client.threads.getState(thread.thread_id);
    const aiId = last(before.values).id;
    const values = await resume(thread, [
      { type: "edit", args: { action: "get_weather", args: { city: "Lyon" } } },
    ]);
    const ai = values.messages.find((m) => m.id === aiId);
    assert.deepEqual(ai.tool_calls[0].args, { city: "Lyon" });
    assert.equal(values.messages.find((m) => m.type === "tool").content, "Sunny, 21 C in Lyon");
  });

  it("response answers the call without running it; the model is called again", async () => {
    const { thread } = await pausedThread("Paris");
    const values = await resume(thread, [{ type: "response", args: "Not now, thanks" }]);
    const tool = values.messages.find((m) => m.type === "tool");
    assert.equal(tool.content, "Not now, thanks");
    assert.equal(tool.status, "error");
    assert.equal(last(values).type, "ai");
    assert.equal(values.messages.filter((m) => m.type === "ai").length, 2);
  });

  it("ignore answers the call and ends the run", async () => {
    const { thread } = await pausedThread("Paris");
    const values = await resume(thread, [{ type: "ignore", args: null }]);
    const answer = last(values);
    assert.equal(answer.type, "tool");
    assert.match(answer.content, /^User ignored the tool call for `get_weather` with id /);
    assert.equal(values.messages.filter((m) => m.type === "ai").length, 1);
    assert.deepEqual((await client.threads.getState(thread.thread_id)).next, []);
  });

  it("a response that is not allowed fails the run; the interrupt waits for a good one", async () => {
    const { thread } = await pausedThread("Oslo");
    // The SDK's runs.wait throws the run's error.
    await assert.rejects(resume(thread, [{ type: "approve" }]), /Response action 'approve' is not allowed/);
    const state = await client.threads.getState(thread.thread_id);
    assert.deepEqual(state.next, ["HumanInTheLoopMiddleware.after_model"]);
    const values = await resume(thread, [{ type: "accept", args: null }]);
    assert.equal(values.messages.find((m) => m.type === "tool").content, "Sunny, 21 C in Oslo");
  });
});
