import { beforeAll, describe, expect, it } from "vitest";
import { iso, serviceForFile } from "../support/service.js";

/**
 * Issue 27: `$eq` on any `summary.weave` value a call shows finds the call, through the API
 * (ingest → worker → ClickHouse → query). computedFields.test.ts checks the same on random
 * rows against the SQL directly.
 */

type Call = { id: string; summary: { weave: Record<string, unknown> } };

const service = serviceForFile();
const api = service.api;
const P = "acme/shown-values";
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

const CALLS = [
  { id: "ref", op_name: "weave:///acme/shown-values/op/summarize:abc", ms: 1500, micros: 999 },
  { id: "encoded", op_name: "weave:///acme/shown-values/op/caf%C3%A9%20bar:abc", ms: 20 },
  { id: "badly-encoded", op_name: "weave:///acme/shown-values/op/50%zz:abc", ms: 0, micros: 400 },
  { id: "empty-display", op_name: "weave:///acme/shown-values/op/step:abc", display_name: "", ms: 7 },
  { id: "display", op_name: "weave:///acme/shown-values/op/step:abc", display_name: "My Eval", ms: 12345 },
  { id: "plain", op_name: "plain-op", ms: 1, exception: "ValueError: bad" },
  { id: "child-error", op_name: "plain-op", ms: 2, summary: { status_counts: { success: 1, error: 2 } } },
  { id: "running", op_name: "weave:///acme/shown-values/op/agent:abc", running: true },
];

beforeAll(async () => {
  await api.json("/call/upsert_batch", {
    batch: CALLS.flatMap((c, i) => [
      { mode: "start", req: { start: { project_id: P, id: c.id, op_name: c.op_name, display_name: c.display_name, trace_id: `t-${c.id}`, started_at: iso(T0 + i * 100_000), attributes: {}, inputs: {} } } },
      ...(c.running ? [] : [{ mode: "end", req: { end: { project_id: P, id: c.id, ended_at: iso(T0 + i * 100_000 + c.ms!, c.micros ?? 0), exception: c.exception, output: null, summary: c.summary ?? {} } } }]),
    ]),
  });
});

describe("summary.weave values shown and found", () => {
  it("shows the Weave forms", async () => {
    const calls = await api.lines<Call>("/calls/stream_query", { project_id: P });
    const weave = Object.fromEntries(calls.map((c) => [c.id, c.summary.weave]));
    expect(weave).toEqual({
      ref: { status: "success", trace_name: "summarize", latency_ms: 1500 },
      encoded: { status: "success", trace_name: "café bar", latency_ms: 20 },
      "badly-encoded": { status: "success", trace_name: "50%zz", latency_ms: 0 },
      "empty-display": { status: "success", trace_name: "step", latency_ms: 7 },
      display: { status: "success", trace_name: "My Eval", latency_ms: 12345 },
      plain: { status: "error", trace_name: "plain-op", latency_ms: 1 },
      "child-error": { status: "descendant_error", trace_name: "plain-op", latency_ms: 2 },
      running: { status: "running", trace_name: "agent", latency_ms: null },
    });
  });

  it("finds each call by $eq on each value it shows", async () => {
    const calls = await api.lines<Call>("/calls/stream_query", { project_id: P });
    for (const call of calls) {
      for (const [key, value] of Object.entries(call.summary.weave)) {
        const field = `summary.weave.${key}`;
        const found = await api.lines<Call>("/calls/stream_query", { project_id: P, columns: ["id"], query: { $expr: { $eq: [{ $getField: field }, { $literal: value }] } } });
        expect({ id: call.id, field, found: found.map((c) => c.id) }).toEqual({ id: call.id, field, found: expect.arrayContaining([call.id]) });
      }
    }
  });
});
