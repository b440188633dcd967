import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_LEAF_CHARS, MAX_LEAVES } from "../../services/jsonLeaves.js";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { encodeRecord } from "../../services/queue/durableLog/recordCodec.js";
import { EncodedJson } from "../../services/queue/encodedJson.js";
import type { CallCompleteEvent, CallEndEvent, CallPartEvent, CallStartEvent, TraceEvent } from "../../services/queue/events.js";
import { traceRecordCodec } from "../../services/queue/traceRecordCodec.js";
import { callRowsBinary } from "../../services/store/calls/callsWrite.js";
import { mergeCallParts } from "../../services/worker/callMerge.js";

/**
 * The call events' log record (traceRecordCodec.ts): what the worker reads back is the
 * events that were written, and the `calls` rows it writes from them are byte for byte the
 * rows it writes from the events as ingest made them (JSON texts, leaves, their budget).
 */

const T = 1_700_000_000_000_000;
const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.constantFrom("", "x".repeat(MAX_LEAF_CHARS + 5), "é".repeat(MAX_LEAF_CHARS)));
const json: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    text,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom("a.b", "__proto__", "0")), tie("value"), { maxKeys: 4 }),
  ),
})).value;
const object = fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 5 }) as fc.Arbitrary<JsonObject>;
const nullableText = fc.option(fc.string({ maxLength: 12 }), { nil: null });

const start = (id: string): fc.Arbitrary<CallStartEvent> =>
  fc.record({
    kind: fc.constant("call_start" as const),
    project_id: fc.constant("acme/p"),
    id: fc.constant(id),
    trace_id: fc.string({ minLength: 1, maxLength: 12 }),
    parent_id: nullableText,
    thread_id: nullableText,
    turn_id: nullableText,
    op_name: fc.string({ maxLength: 20 }),
    display_name: nullableText,
    started_at: fc.integer({ min: T, max: T + 1e9 }),
    attributes: object,
    inputs: object,
    otel_dump: fc.option(object, { nil: null }),
    wb_user_id: nullableText,
    wb_run_id: nullableText,
    wb_run_step: fc.option(fc.nat(), { nil: null }),
  });

const end = (id: string): fc.Arbitrary<CallEndEvent> =>
  fc.record(
    {
      kind: fc.constant("call_end" as const),
      project_id: fc.constant("acme/p"),
      id: fc.constant(id),
      ended_at: fc.integer({ min: T, max: T + 2e9 }),
      exception: nullableText,
      output: json,
      summary: object,
      wb_run_step_end: fc.option(fc.nat(), { nil: null }),
      trace_id: nullableText,
      started_at: fc.option(fc.integer({ min: T, max: T + 1e9 }), { nil: null }),
    },
    { requiredKeys: ["kind", "project_id", "id", "ended_at", "exception", "output", "summary", "wb_run_step_end"] },
  );

const complete = (id: string): fc.Arbitrary<CallCompleteEvent> =>
  fc.tuple(start(id), end(id)).map(([s, e]) => ({
    ...s,
    kind: "call_complete" as const,
    ended_at: e.ended_at,
    exception: e.exception,
    output: e.output,
    summary: e.summary,
    wb_run_step_end: e.wb_run_step_end,
  }));

/** The parts of a few calls: a start and an end, a complete call, or a lone end. */
const calls = fc
  .array(fc.constantFrom("start+end", "complete", "start", "end"), { minLength: 1, maxLength: 6 })
  .chain((shapes) =>
    fc.tuple(
      ...shapes.map((shape, n): fc.Arbitrary<CallPartEvent[]> => {
        const id = `c${n}`;
        if (shape === "start+end") return fc.tuple(start(id), end(id));
        if (shape === "complete") return complete(id).map((c) => [c]);
        return shape === "start" ? start(id).map((s) => [s]) : end(id).map((e) => [e]);
      }),
    ),
  );

const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
const roundTrip = (events: readonly TraceEvent[]) => traceRecordCodec.decode(traceRecordCodec.encode(events));

/** The rows the worker writes for these parts (calls whose start is among them). */
function rows(parts: readonly (readonly CallPartEvent[])[]): Buffer {
  const snapshots = parts.map((list) => mergeCallParts(null, list).snapshot).filter((s) => s !== null);
  return Buffer.from(callRowsBinary(snapshots.map((snapshot, n) => ({ snapshot, version: n + 1 }))));
}

function regroup(decoded: readonly TraceEvent[], parts: readonly (readonly CallPartEvent[])[]): CallPartEvent[][] {
  let at = 0;
  return parts.map((list) => list.map(() => decoded[at++] as CallPartEvent));
}

describe("the call events' log record", () => {
  it("gives back the events written, their JSON fields encoded", () => {
    fc.assert(
      fc.property(calls, (parts) => {
        const events = parts.flat();
        const { messages, malformed } = roundTrip(events);
        expect(malformed).toBeUndefined();
        expect(asJson(messages)).toEqual(asJson(events));
        for (const message of messages) {
          if (message.kind === "call_start" || message.kind === "call_complete") expect(message.attributes).toBeInstanceOf(EncodedJson);
          // A null stays in the header: nothing to encode.
          if ((message.kind === "call_end" || message.kind === "call_complete") && message.output !== null) expect(message.output).toBeInstanceOf(EncodedJson);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("makes the same calls rows, byte for byte, as the events ingest made", () => {
    fc.assert(
      fc.property(calls, (parts) => {
        const decoded = roundTrip(parts.flat()).messages;
        expect(rows(regroup(decoded, parts)).equals(rows(parts))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it("cuts at the leaf budget where the whole call's flattening does", () => {
    const wide = (n: number, prefix: string) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i % 3 === 0 ? "v".repeat(MAX_LEAF_CHARS + i) : i]));
    for (const [attributes, inputs, output] of [
      [wide(600, "a"), wide(600, "i"), wide(10, "o")],
      [wide(MAX_LEAVES, "a"), {}, null],
      [wide(MAX_LEAVES + 5, "a"), wide(3, "i"), wide(2, "o")],
      [{}, wide(999, "i"), "one"],
    ] as [JsonObject, JsonObject, JsonValue][]) {
      const parts: CallPartEvent[][] = [
        [
          { kind: "call_start", project_id: "acme/p", id: "w", trace_id: "t", parent_id: null, thread_id: null, turn_id: null, op_name: "op", display_name: null, started_at: T, attributes, inputs, otel_dump: null, wb_user_id: null, wb_run_id: null, wb_run_step: null },
          { kind: "call_end", project_id: "acme/p", id: "w", ended_at: T + 5, exception: null, output, summary: { usage: { m: { requests: 1 } } }, wb_run_step_end: null },
        ],
      ];
      const decoded = roundTrip(parts.flat()).messages;
      expect(rows(regroup(decoded, parts)).equals(rows(parts))).toBe(true);
    }
  });

  it("still reads the JSON records logs written before it hold", () => {
    const event: CallStartEvent = {
      kind: "call_start", project_id: "acme/p", id: "old", trace_id: "t", parent_id: null, thread_id: null, turn_id: null, op_name: "op",
      display_name: null, started_at: T, attributes: { a: 1 }, inputs: { q: "x" }, otel_dump: null, wb_user_id: null, wb_run_id: null, wb_run_step: null,
    };
    expect(traceRecordCodec.decode(encodeRecord([event]))).toEqual({ messages: [event] });
  });

  it("sets aside a record it cannot read, whole, instead of failing the batch", () => {
    const record = traceRecordCodec.encode([{ kind: "call_update", project_id: "acme/p", id: "c", display_name: "d", updated_at: 1 }]);
    const { messages, malformed } = traceRecordCodec.decode(record.subarray(0, record.length - 3));
    expect(messages).toEqual([]);
    expect(malformed).toHaveLength(1);
  });
});
