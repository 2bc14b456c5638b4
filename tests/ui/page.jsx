// SPDX-License-Identifier: MIT
// The chat page that use-stream.test.mjs drives: useStream from @langchain/langgraph-sdk/react
// against a `stategraph serve` on another origin, as chat UIs built on it do (bundled with
// esbuild at test time). The query string sets it up: api (the server's URL), key (its API
// key), assistant, and thread (a thread to open; the page writes the thread useStream creates
// back into the address, so a reload opens it again).
import { useStream } from "@langchain/langgraph-sdk/react";
import { useState } from "react";
import { createRoot } from "react-dom/client";

const query = new URLSearchParams(location.search);

const textOf = (message) =>
  typeof message.content === "string"
    ? message.content
    : message.content.map((part) => part.text ?? "").join("");

function Chat() {
  const [threadId, setThreadId] = useState(query.get("thread"));
  const [runs, setRuns] = useState([]); // the runs useStream started (onCreated)
  const [draft, setDraft] = useState("");
  const stream = useStream({
    apiUrl: query.get("api"),
    apiKey: query.get("key"),
    assistantId: query.get("assistant"),
    messagesKey: "messages",
    fetchStateHistory: { limit: 100 }, // the thread's checkpoints: history, branches
    threadId,
    onThreadId: (id) => {
      setThreadId(id);
      query.set("thread", id);
      history.replaceState(null, "", `?${query}`);
    },
    onCreated: (run) => setRuns((seen) => [...seen, run.run_id]),
    onError: (error) => console.error(`useStream: ${error}`),
  });

  const human = (content) => ({ messages: [{ type: "human", content }] });
  const send = (event) => {
    event.preventDefault();
    stream.submit(human(draft));
    setDraft("");
  };
  // Edit a human message: a new run from the checkpoint before it, a branch of the thread.
  const edit = (meta) => {
    stream.submit(human(draft), { checkpoint: meta.firstSeenState.parent_checkpoint });
    setDraft("");
  };

  return (
    <main data-loading={String(stream.isLoading)}>
      <p>thread <span id="thread">{threadId ?? ""}</span></p>
      <p>checkpoints on this branch <span id="history">{stream.history.length}</span></p>
      <p>runs <span id="runs">{runs.join(" ")}</span></p>
      <ol id="messages">
        {stream.messages.map((message, index) => {
          const meta = stream.getMessagesMetadata(message, index);
          const options = meta?.branchOptions ?? [];
          const at = options.indexOf(meta?.branch);
          return (
            <li key={message.id ?? index} className={`msg ${message.type}`}>
              <span className="text">{textOf(message)}</span>
              {options.length > 1 && (
                <span className="branches">
                  <button className="prev" onClick={() => stream.setBranch(options[at - 1])} disabled={at <= 0}>&lt;</button>
                  <span className="at">{`${at + 1}/${options.length}`}</span>
                  <button className="next" onClick={() => stream.setBranch(options[at + 1])} disabled={at + 1 >= options.length}>&gt;</button>
                </span>
              )}
              {message.type === "human" && meta?.firstSeenState && (
                <button className="edit" onClick={() => edit(meta)}>edit</button>
              )}
            </li>
          );
        })}
      </ol>
      <form onSubmit={send}>
        <input id="text" value={draft} onChange={(event) => setDraft(event.target.value)} />
        <button id="send" disabled={stream.isLoading}>Send</button>
        <button id="stop" type="button" onClick={() => stream.stop()} disabled={!stream.isLoading}>Stop</button>
      </form>
      {stream.error != null && <p id="error">{String(stream.error)}</p>}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
