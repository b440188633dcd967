import { describe, expect, it } from "vitest";
import { isTraceEvent, TraceEventSchema, type TraceEvent } from "../../services/queue/events.js";
import { seededRandom } from "../support/seededRandom.js";

const VALID: TraceEvent[] = [
  {
    kind: "call_start", project_id: "acme/p", id: "c1", trace_id: "t1", parent_id: null, thread_id: "th", turn_id: null, op_name: "op",
    display_name: null, started_at: 1_700_000_000_000_000, attributes: { a: 1 }, inputs: {}, otel_dump: null, wb_user_id: "alice",
    wb_run_id: null, wb_run_step: 3,
  },
  { kind: "call_end", project_id: "acme/p", id: "c1", ended_at: 1_700_000_000_000_500, exception: null, output: [1, "x"], summary: {}, wb_run_step_end: null },
  {
    kind: "call_end", project_id: "acme/p", id: "c2", ended_at: 1_700_000_000_000_500, exception: "boom", output: null, summary: { a: 1 },
    wb_run_step_end: 2, trace_id: "t1", started_at: 1_700_000_000_000_000,
  },
  {
    kind: "call_complete", project_id: "acme/p", id: "c3", trace_id: "t1", parent_id: "c1", thread_id: null, turn_id: null, op_name: "op",
    display_name: "d", started_at: 1_700_000_000_000_000, attributes: {}, inputs: { q: 1 }, otel_dump: null, wb_user_id: "alice",
    wb_run_id: null, wb_run_step: null, ended_at: 1_700_000_000_000_900, exception: null, output: "x", summary: {}, wb_run_step_end: null,
  },
  { kind: "call_update", project_id: "acme/p", id: "c1", display_name: "renamed", updated_at: 5 },
  { kind: "calls_delete", project_id: "acme/p", ids: ["c1", "c2"], deleted_at: 6, wb_user_id: "alice" },
  { kind: "otlp_export", project_id: "acme/p", id: "00f067aa0ba902b7", wb_user_id: "alice", format: "protobuf", body: Buffer.from("CgA=", "base64"), max_span_bytes: 4096, spans: 2 },
  {
    kind: "otlp_log_records", project_id: "acme/p", id: "00f067aa0ba902b7",
    records: [{
      trace_id: "0af7651916cd43dd8448eb211c80319c", span_id: "00f067aa0ba902b7", time: 1_700_000_000_000_100, position: 0, event_name: "gen_ai.user.message",
      severity_number: 9, severity_text: "INFO", body: { content: "hi" }, attributes: { a: 1 }, scope_name: "s",
    }],
  },
];

const RECORD_FIELDS = ["trace_id", "span_id", "time", "position", "event_name", "severity_number", "severity_text", "body", "attributes", "scope_name", "extra"];

/** Values of every JSON kind and the edges of the checks: unsafe and fractional numbers, -0, empty containers. */
const ODD_VALUES: unknown[] = [
  undefined, null, true, false, 0, -0, 1, -7, 1.5, 2 ** 53, -(2 ** 53), Number.MAX_SAFE_INTEGER, NaN, Infinity, "", "x", "call_start",
  "calls_delete", "otlp_export", "json", "protobuf", "xml", [], ["a"], [1], ["a", null], {}, { a: 1 }, { kind: "call_end" }, [[]],
  new Uint8Array([10, 0]),
];

const FIELDS = [...new Set(VALID.flatMap((e) => Object.keys(e))), "extra"];

function mutate(event: TraceEvent, next: () => number): unknown {
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  if (next() < 0.03) return pick(ODD_VALUES);
  const copy: Record<string, unknown> = { ...event, ...(event.kind === "calls_delete" ? { ids: [...event.ids] } : {}) };
  const changes = 1 + Math.floor(next() * 3);
  for (let i = 0; i < changes; i++) {
    const roll = next();
    if (roll < 0.15) copy.kind = pick(VALID).kind;
    else if (roll < 0.25 && Array.isArray(copy.ids)) {
      // A copy: `ids` may be one of ODD_VALUES' arrays, which must not change (nor get holes, which JSON never has).
      const ids = [...(copy.ids as unknown[])];
      ids[Math.min(Math.floor(next() * 3), ids.length)] = pick(ODD_VALUES);
      copy.ids = ids;
    }
    else if (roll < 0.4 && Array.isArray(copy.records)) {
      const record: Record<string, unknown> = { ...(copy.records[0] as Record<string, unknown>) };
      const value = pick(ODD_VALUES);
      if (value === undefined && next() < 0.5) delete record[pick(RECORD_FIELDS)];
      else record[pick(RECORD_FIELDS)] = value;
      copy.records = next() < 0.2 ? pick(ODD_VALUES) : [record];
    }
    else {
      const field = pick(FIELDS);
      const value = pick(ODD_VALUES);
      if (value === undefined && next() < 0.5) delete copy[field];
      else copy[field] = value;
    }
  }
  return copy;
}

describe("the trace event check", () => {
  it("accepts exactly what the schema accepts, on valid events and random changes of them", () => {
    const next = seededRandom(20261121);
    let accepted = 0;
    let refused = 0;
    for (const event of VALID) {
      expect(isTraceEvent(event)).toBe(true);
      expect(TraceEventSchema.safeParse(event).success).toBe(true);
    }
    for (let i = 0; i < 50_000; i++) {
      const value = mutate(VALID[i % VALID.length]!, next);
      const bySchema = TraceEventSchema.safeParse(value).success;
      if (isTraceEvent(value) !== bySchema) expect({ value, bySchema }).toBeUndefined();
      if (bySchema) accepted++;
      else refused++;
    }
    // Both verdicts are well represented: the agreement is not one of always saying no.
    expect(accepted).toBeGreaterThan(5_000);
    expect(refused).toBeGreaterThan(5_000);
  });

  it("refuses an event whose JSON-valued field is missing or of the wrong kind", () => {
    const { output: _, ...endWithoutOutput } = VALID[1] as Extract<TraceEvent, { kind: "call_end" }>;
    expect(isTraceEvent(endWithoutOutput)).toBe(false);
    expect(isTraceEvent({ ...VALID[0]!, inputs: [] })).toBe(false);
    expect(isTraceEvent({ ...VALID[0]!, started_at: 1.5 })).toBe(false);
    expect(isTraceEvent({ ...VALID[1]!, output: null })).toBe(true);
    // Ends written before trace_id and started_at existed are still call ends.
    expect(isTraceEvent({ ...VALID[2]!, trace_id: undefined, started_at: undefined })).toBe(true);
    expect(isTraceEvent({ ...VALID[2]!, started_at: "2026-11-21T10:00:00Z" })).toBe(false);
    const { summary: _s, ...completeWithoutSummary } = VALID[3] as Extract<TraceEvent, { kind: "call_complete" }>;
    expect(isTraceEvent(completeWithoutSummary)).toBe(false);
  });
});

describe("the event layouts (fields derived from contract/callFields.ts)", () => {
  it("keep the key order the durable log writes events in, positionally", () => {
    const keys = (kind: string) => {
      const option = TraceEventSchema.options.find((o) => o.shape.kind.value === kind)!;
      return Object.keys(option.shape);
    };
    const start = ["kind", "project_id", "id", "trace_id", "parent_id", "thread_id", "turn_id", "op_name", "display_name", "started_at", "attributes", "inputs", "otel_dump", "wb_user_id", "wb_run_id", "wb_run_step"];
    const end = ["ended_at", "exception", "output", "summary", "wb_run_step_end"];
    expect(keys("call_start")).toEqual(start);
    expect(keys("call_complete")).toEqual([...start, ...end]);
    expect(keys("call_end")).toEqual(["kind", "project_id", "id", ...end, "trace_id", "started_at"]);
  });
});
