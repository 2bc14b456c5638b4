// SPDX-License-Identifier: MIT
// The timeline of a run: its node tasks, model and tool calls and checkpoint writes as bars on
// the run's time axis, nested under their parents (GET /threads/{id}/runs/{run}/spans: the
// spans the server's callbacks recorded, the ones it sends to an OpenTelemetry collector).
import { el } from "./dom.js";

/** Shows `spans` (the endpoint's array) in `list`, an <ol>. An empty array clears it. */
export function renderTimeline(list, spans) {
  list.replaceChildren();
  if (!spans.length) return;
  const start = (s) => Date.parse(s.start);
  const t0 = Math.min(...spans.map(start));
  const t1 = Math.max(...spans.map((s) => Date.parse(s.end)));
  const total = Math.max(t1 - t0, 1);
  const byId = new Map(spans.map((s) => [s.span_id, s]));
  const depth = (s) => {
    let d = 0;
    for (let p = byId.get(s.parent_span_id); p && d < 16; p = byId.get(p.parent_span_id)) d += 1;
    return d;
  };
  const ordered = [...spans].sort((a, b) => start(a) - start(b) || depth(a) - depth(b));
  for (const span of ordered) {
    const row = el("li", `span span-${span.kind}${span.status === "ok" ? "" : " span-failed"}`);
    row.dataset.kind = span.kind;
    row.style.setProperty("--depth", String(depth(span)));
    const label = el("span", "span-label", span.kind === "checkpoint" ? "checkpoint" : span.name);
    const took = el("span", "span-time", `${span.duration_ms.toFixed(span.duration_ms < 10 ? 2 : 0)} ms`);
    const track = el("span", "span-track");
    const bar = el("span", "span-bar");
    bar.style.left = `${((start(span) - t0) / total) * 100}%`;
    bar.style.width = `${Math.max((span.duration_ms / total) * 100, 0.5)}%`;
    track.append(bar);
    const details = [`${span.kind} ${span.name}`, `${span.duration_ms} ms`, span.status];
    if (span.input_tokens !== undefined) details.push(`${span.input_tokens} in / ${span.output_tokens} out tokens`);
    if (span.bytes !== undefined) details.push(`${span.bytes} bytes`);
    if (span.error) details.push(span.error);
    row.title = details.join(" · ");
    row.append(label, track, took);
    list.append(row);
  }
}
