import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { recordCodecOf } from "../../services/queue/durableLog/storage/recordCodec.js";
import type { CallEndEvent, CallStartEvent, OtlpExportEvent, TraceEvent } from "../../services/queue/events.js";
import { messageWriter } from "../../services/queue/queue.js";
import { recordReader } from "../../services/queue/kafka/records.js";
import { jobsTopic, type JobMessage } from "../../services/queue/jobs.js";
import { traceEventsTopic } from "../../services/queue/events.js";

/**
 * The durable log's record codec: call events are written positionally (their values in the
 * schema's key order, no key names) and read back as the objects that were written.
 */

const codec = recordCodecOf(traceEventsTopic("events"));
const T = 1_700_000_000_000_000;
const text = fc.string({ maxLength: 12 });
const nullableText = fc.option(text, { nil: null });
const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const object = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 4 }) as fc.Arbitrary<JsonObject>;

const start: fc.Arbitrary<CallStartEvent> = fc.record({
  kind: fc.constant("call_start" as const),
  project_id: text,
  id: text,
  trace_id: text,
  parent_id: nullableText,
  thread_id: nullableText,
  turn_id: nullableText,
  op_name: text,
  display_name: nullableText,
  started_at: fc.integer({ min: T, max: T + 1e9 }),
  attributes: object,
  inputs: object,
  otel_dump: fc.option(object, { nil: null }),
  wb_user_id: nullableText,
  wb_run_id: nullableText,
  wb_run_step: fc.option(fc.nat(), { nil: null }),
});

/** Ends as ingest makes them (trace_id and started_at, either null) and as events written before those fields were. */
const end: fc.Arbitrary<CallEndEvent> = fc
  .tuple(
    fc.record({
      kind: fc.constant("call_end" as const),
      project_id: text,
      id: text,
      ended_at: fc.integer({ min: T, max: T + 2e9 }),
      exception: nullableText,
      output: json,
      summary: object,
      wb_run_step_end: fc.option(fc.nat(), { nil: null }),
    }),
    fc.option(fc.record({ trace_id: nullableText, started_at: fc.option(fc.integer({ min: T, max: T + 1e9 }), { nil: null }) }), { nil: undefined }),
  )
  .map(([fields, start]) => ({ ...fields, ...start }));

const others: fc.Arbitrary<TraceEvent> = fc.oneof(
  fc.record({ kind: fc.constant("call_update" as const), project_id: text, id: text, display_name: text, updated_at: fc.nat() }),
  fc.record({ kind: fc.constant("calls_delete" as const), project_id: text, ids: fc.array(text, { maxLength: 3 }), deleted_at: fc.nat(), wb_user_id: text }),
  start.map((s): TraceEvent => ({ ...s, kind: "call_complete", ended_at: T + 5, exception: null, output: [1], summary: {}, wb_run_step_end: null })),
);
const events = fc.array(fc.oneof(start, end, others), { minLength: 1, maxLength: 8 });

/** What JSON keeps of a value: absent stays absent, an undefined field is left out. */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe("the durable log's record codec", () => {
  it("reads back the events written, written without their key names", () => {
    fc.assert(
      fc.property(events, (written) => {
        const record = codec.encode(written);
        const read = codec.decode(record);
        expect(read.malformed).toBeUndefined();
        expect(read.messages).toEqual(asJson(written));
        expect(record.toString()).not.toContain('"project_id"');
        expect(record.length).toBeLessThan(Buffer.byteLength(JSON.stringify(written)));
      }),
      { numRuns: 300 },
    );
  });

  it("writes as an object, and reads back whole, an event a positional form would change", () => {
    const base: CallEndEvent = { kind: "call_end", project_id: "p", id: "c", ended_at: T, exception: null, output: null, summary: {}, wb_run_step_end: null };
    const hole = { ...base, trace_id: undefined, started_at: T - 5 };
    const extra = { ...base, trace_id: "t", note: "kept" } as CallEndEvent;
    const record = codec.encode([hole, extra, base]);
    expect(JSON.parse(record.toString())).toEqual([asJson(hole), asJson(extra), ["call_end", "p", "c", T, null, null, {}, null]]);
    expect(codec.decode(record)).toEqual({ messages: [asJson(hole), asJson(extra), base] });
  });

  it("reads the records of objects that logs written before it hold, and sets aside what is not an event", () => {
    const old: CallEndEvent = { kind: "call_end", project_id: "p", id: "c", ended_at: T, exception: "x", output: 1, summary: { a: 1 }, wb_run_step_end: 2 };
    expect(codec.decode(Buffer.from(JSON.stringify([old])))).toEqual({ messages: [old] });
    const odd = codec.decode(Buffer.from(JSON.stringify([["call_end", "p"], ["no_such_kind", 1], old])));
    expect(odd.messages).toEqual([old]);
    expect(odd.malformed).toEqual([{ kind: "call_end", project_id: "p" }, ["no_such_kind", 1]]);
  });

  it("keeps a topic whose schema is not a union of objects as JSON objects", () => {
    const jobs = recordCodecOf(jobsTopic("jobs"));
    const job: JobMessage = { id: "j", type: "t", serial_key: "k", input: { a: 1 }, submitted_at: T };
    const record = jobs.encode([job, job]);
    expect(record.toString()).toBe(`[\n${JSON.stringify(job)},\n${JSON.stringify(job)}\n]`);
    expect(jobs.decode(record)).toEqual({ messages: [job, job] });
  });

  describe("an OTLP export's body (a bytes field)", () => {
    const exportOf = (body: Uint8Array, id = "00f067aa0ba902b7"): OtlpExportEvent =>
      ({ kind: "otlp_export", project_id: "acme/p", id, wb_user_id: "alice", format: "protobuf", body, max_span_bytes: 4096, spans: 2 });
    const bodies = fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 4 });
    const mixed = fc.tuple(bodies, events).map(([list, calls]) => [...list.map((b, i) => exportOf(b, `e${i}`)), ...calls] as TraceEvent[]);

    it("is kept as raw bytes beside the JSON, read back byte for byte among other events", () => {
      fc.assert(
        fc.property(mixed, (written) => {
          const record = codec.encode(written);
          expect(record[0]).toBe(0x01);
          const read = codec.decode(record);
          expect(read.malformed).toBeUndefined();
          expect(read.messages.map((m) => (m.kind === "otlp_export" ? { ...m, body: [...m.body] } : m))).toEqual(
            asJson(written.map((m) => (m.kind === "otlp_export" ? { ...m, body: [...m.body] } : m))),
          );
        }),
        { numRuns: 200 },
      );
    });

    it("is never written as text: the record holds the body's bytes and not their base64", () => {
      const body = Buffer.from("a protobuf body \u00ff".repeat(40));
      const record = codec.encode([exportOf(body)]);
      expect(record.includes(body)).toBe(true);
      expect(record.includes(Buffer.from(body.toString("base64")))).toBe(false);
    });

    it("is read back as bytes of its own, which do not hold the memory of the read it came in", () => {
      const body = Buffer.alloc(16 * 1024, 7);
      const record = codec.encode([exportOf(body)]);
      // As the log's reader hands it: one record among others in one buffer read from disk.
      const read = Buffer.concat([Buffer.alloc(64 * 1024), record, Buffer.alloc(64 * 1024)]);
      const decoded = codec.decode(read.subarray(64 * 1024, 64 * 1024 + record.length)).messages[0] as OtlpExportEvent;
      expect(Buffer.from(decoded.body).equals(body)).toBe(true);
      expect(decoded.body.buffer).not.toBe(read.buffer);
      expect(decoded.body.buffer.byteLength).toBe(body.length);
    });

    it("reads the base64 body of records written before, and sets aside a record cut short", () => {
      const body = Buffer.from([10, 0, 255, 1]);
      const old = Buffer.from(JSON.stringify([["otlp_export", "acme/p", "00f067aa0ba902b7", "alice", "protobuf", body.toString("base64"), 4096, 2]]));
      const read = codec.decode(old).messages[0] as OtlpExportEvent;
      expect(Buffer.from(read.body).equals(body)).toBe(true);
      const record = codec.encode([exportOf(body)]);
      for (const cut of [1, 4, record.length - 1]) {
        const decoded = codec.decode(record.subarray(0, cut));
        expect(decoded.messages).toEqual([]);
        expect(decoded.malformed).toHaveLength(1);
      }
    });

    it("is base64 in a message's JSON (Kafka), and read back as the same bytes", () => {
      const topic = traceEventsTopic("events");
      const body = Buffer.from([0, 1, 2, 250, 251]);
      const text = messageWriter(topic)(exportOf(body));
      expect(JSON.parse(text)).toMatchObject({ kind: "otlp_export", body: body.toString("base64") });
      const [read] = recordReader(topic)(Buffer.from(text)).messages as OtlpExportEvent[];
      expect(Buffer.from(read!.body).equals(body)).toBe(true);
      const packed = recordReader(topic)(Buffer.from(`[${text},${text}]`)).messages as OtlpExportEvent[];
      expect(packed.map((m) => Buffer.from(m.body).equals(body))).toEqual([true, true]);
      expect(recordReader(topic)(Buffer.from(JSON.stringify({ ...exportOf(body), body: 7 }))).messages).toEqual([]);
    });
  });
});
