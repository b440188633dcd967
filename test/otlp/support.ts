import { expect } from "vitest";
import type { CallCompleteEvent } from "../../services/queue/events.js";
import type { OtlpSpan, OtlpSpanBatch } from "../../services/otlp/decode.js";
import { mapSpans, type MapSpansContext } from "../../services/otlp/mapSpan.js";
import type { JsonValue } from "../../services/json.js";

export const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
export const SPAN_ID = "b7ad6b7169203331";
export const PARENT_ID = "00f067aa0ba902b7";
/** 2023-11-14T22:13:20.123456789Z */
export const START_NS = 1_700_000_000_123_456_789n;
export const END_NS = 1_700_000_001_987_654_321n;

export const CTX = { project_id: "acme/chat", wb_user_id: "user-7", maxSpanBytes: 1_000_000 } satisfies MapSpansContext;

export function makeSpan(overrides: Partial<OtlpSpan> = {}): OtlpSpan {
  return {
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    traceState: "",
    parentSpanId: "",
    flags: 0,
    name: "chat gpt-4o",
    kind: 3,
    startTimeUnixNano: START_NS,
    endTimeUnixNano: END_NS,
    attributes: {},
    droppedAttributesCount: 0,
    events: [],
    droppedEventsCount: 0,
    links: [],
    droppedLinksCount: 0,
    status: { code: 0, message: "" },
    ...overrides,
  };
}

export function batchOf(spans: OtlpSpan[], resourceAttributes: Record<string, JsonValue> = {}): OtlpSpanBatch {
  return {
    resources: [
      {
        attributes: resourceAttributes,
        droppedAttributesCount: 0,
        schemaUrl: "",
        scopes: [
          {
            scope: { name: "openinference.instrumentation.openai", version: "0.1.2", attributes: {}, droppedAttributesCount: 0 },
            schemaUrl: "",
            spans,
          },
        ],
      },
    ],
  };
}

/**
 * Maps one span that must be accepted; returns its one complete-call event, also as `start`
 * and `end` for the tests that look at its start or end fields.
 */
export function mapOne(span: OtlpSpan, ctx: MapSpansContext = CTX): { call: CallCompleteEvent; start: CallCompleteEvent; end: CallCompleteEvent } {
  const result = mapSpans(batchOf([span]), ctx);
  expect(result.rejected).toBe(0);
  expect(result.errors).toEqual([]);
  expect(result.events).toHaveLength(1);
  const [call] = result.events;
  if (call?.kind !== "call_complete") throw new Error("expected one complete call event");
  return { call, start: call, end: call };
}

/** Maps a span with just these attributes. */
export function mapAttributes(attributes: Record<string, JsonValue>, overrides: Partial<OtlpSpan> = {}) {
  return mapOne(makeSpan({ attributes, ...overrides }));
}
