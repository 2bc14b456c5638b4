// SPDX-License-Identifier: MIT
// The server's public API (LangGraph Server API), as the studio uses it. The API key, when the
// server has one, is asked for once and kept in sessionStorage for the tab's life.

const KEY = "stategraph-studio-api-key";
let askKey = async () => null;

/** Sets the function that asks the user for the API key (returns it, or null). */
export function onKeyNeeded(ask) {
  askKey = ask;
}

export function apiKey() {
  return sessionStorage.getItem(KEY) || "";
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

/** An API error: the HTTP status and the server's `detail`. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

async function send(method, path, body, accept) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: accept };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (apiKey()) headers["x-api-key"] = apiKey();
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401 && attempt === 0) {
      const key = await askKey();
      if (key) {
        setApiKey(key);
        continue;
      }
    }
    if (!response.ok) {
      let detail = response.statusText;
      try {
        detail = (await response.json()).detail ?? detail;
      } catch {
        // not JSON: keep the status text
      }
      throw new ApiError(response.status, detail);
    }
    return response;
  }
}

/** A JSON request; resolves to the parsed body (null for 204). */
export async function call(method, path, body) {
  const response = await send(method, path, body, "application/json");
  if (response.status === 204) return null;
  return response.json();
}

/** A text request (the graph's SVG). */
export async function text(path) {
  return (await send("GET", path, undefined, "*/*")).text();
}

/**
 * POSTs `body` to a streaming endpoint and calls onEvent(name, data) for each server-sent event
 * as it arrives; resolves when the stream ends.
 */
export async function stream(path, body, onEvent) {
  const response = await send("POST", path, body, "text/event-stream");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length === 0) continue;
      let parsed = data.join("\n");
      try {
        parsed = JSON.parse(parsed);
      } catch {
        // keep the text
      }
      onEvent(name, parsed);
    }
  }
}
