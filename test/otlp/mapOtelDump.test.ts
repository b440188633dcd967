import fc from "fast-check";
import { describe, it, expect } from "vitest";
import { mapSpans } from "../../services/otlp/mapSpan.js";
import { IN_CALL_ATTRIBUTES, IN_CALL_RESOURCE, fullOtelDump } from "../../services/otlp/otelDump.js";
import type { JsonObject } from "../../services/json.js";
import { CTX, makeSpan, mapAttributes, mapOne, PARENT_ID, SPAN_ID, TRACE_ID } from "./support.js";

describe("mapSpans: otel_dump", () => {
  it("keeps the whole span with its resource and scope; the attributes the call keeps come back from it", () => {
    const span = makeSpan({
      parentSpanId: PARENT_ID,
      traceState: "vendor=1",
      flags: 0x301,
      kind: 2,
      attributes: { "gen_ai.request.model": "gpt-4o", n: 1 },
      droppedAttributesCount: 1,
      events: [{ timeUnixNano: 1_700_000_000_500_000_001n, name: "exception", attributes: { "exception.type": "ValueError" }, droppedAttributesCount: 0 }],
      droppedEventsCount: 2,
      links: [{ traceId: TRACE_ID, spanId: "1111111111111111", traceState: "", attributes: { why: "retry" }, droppedAttributesCount: 0, flags: 1 }],
      droppedLinksCount: 3,
      status: { code: 2, message: "boom" },
    });
    const batch = {
      resources: [
        {
          attributes: { "service.name": "chat-api" },
          droppedAttributesCount: 4,
          schemaUrl: "https://opentelemetry.io/schemas/1.26.0",
          scopes: [{ scope: { name: "lib", version: "1.0", attributes: { s: true }, droppedAttributesCount: 5 }, schemaUrl: "scope-schema", spans: [span] }],
        },
      ],
    };
    const [call] = mapSpans(batch, CTX).events;
    // The span's and the resource's attributes are the call's: left out of the dump.
    expect(call?.otel_dump).not.toHaveProperty("attributes");
    expect(call?.otel_dump?.["resource"]).toEqual({ dropped_attributes_count: 4, schema_url: "https://opentelemetry.io/schemas/1.26.0" });
    expect(call?.otel_dump && fullOtelDump(call.otel_dump, call)).toEqual({
      resource: { attributes: { "service.name": "chat-api" }, dropped_attributes_count: 4, schema_url: "https://opentelemetry.io/schemas/1.26.0" },
      scope: { name: "lib", version: "1.0", attributes: { s: true }, dropped_attributes_count: 5, schema_url: "scope-schema" },
      trace_id: TRACE_ID,
      span_id: SPAN_ID,
      parent_span_id: PARENT_ID,
      trace_state: "vendor=1",
      flags: 0x301,
      name: "chat gpt-4o",
      kind: "SPAN_KIND_SERVER",
      start_time_unix_nano: "1700000000123456789",
      end_time_unix_nano: "1700000001987654321",
      attributes: { "gen_ai.request.model": "gpt-4o", n: 1 },
      dropped_attributes_count: 1,
      events: [{ time_unix_nano: "1700000000500000001", name: "exception", attributes: { "exception.type": "ValueError" }, dropped_attributes_count: 0 }],
      dropped_events_count: 2,
      links: [{ trace_id: TRACE_ID, span_id: "1111111111111111", trace_state: "", attributes: { why: "retry" }, dropped_attributes_count: 0, flags: 1 }],
      dropped_links_count: 3,
      status: { code: "STATUS_CODE_ERROR", message: "boom" },
    });
  });

  it("writes a root span's parent as null and unknown enum values as numbers", () => {
    const [start] = mapSpans(
      { resources: [{ attributes: {}, droppedAttributesCount: 0, schemaUrl: "", scopes: [{ scope: { name: "", version: "", attributes: {}, droppedAttributesCount: 0 }, schemaUrl: "", spans: [makeSpan({ kind: 9, status: { code: 7, message: "" } })] }] }] },
      CTX,
    ).events;
    expect(start?.otel_dump && fullOtelDump(start.otel_dump, start)).toMatchObject({ parent_span_id: null, kind: 9, status: { code: 7, message: "" } });
  });

  it("leaves out the fields at their OTLP defaults and those the call holds, and gives them back", () => {
    const { call } = mapOne(makeSpan({ attributes: {} }));
    expect(call.otel_dump).toEqual({
      kind: "SPAN_KIND_CLIENT",
      start_time_unix_nano: "1700000000123456789",
      end_time_unix_nano: "1700000001987654321",
    });
    expect(fullOtelDump(call.otel_dump!, call)).toEqual({
      resource: { attributes: {}, dropped_attributes_count: 0, schema_url: "" },
      scope: { name: "openinference.instrumentation.openai", version: "0.1.2", attributes: {}, dropped_attributes_count: 0, schema_url: "" },
      trace_id: TRACE_ID,
      span_id: SPAN_ID,
      parent_span_id: null,
      trace_state: "",
      flags: 0,
      name: "chat gpt-4o",
      kind: "SPAN_KIND_CLIENT",
      start_time_unix_nano: "1700000000123456789",
      end_time_unix_nano: "1700000001987654321",
      attributes: {},
      dropped_attributes_count: 0,
      events: [],
      dropped_events_count: 0,
      links: [],
      dropped_links_count: 0,
      status: { code: "STATUS_CODE_UNSET", message: "" },
    });
  });

  it("gives back the times in whole microseconds, an all-zeros parent and the scope from the call; a dump stored with every field, or naming the call's attributes, reads the same", () => {
    const zeros = "0".repeat(16);
    const { call } = mapOne(makeSpan({ parentSpanId: zeros, startTimeUnixNano: 1_700_000_000_123_456_000n, endTimeUnixNano: 1_700_000_001_000_000_000n, attributes: {} }));
    expect(call.parent_id).toBeNull();
    expect(call.otel_dump).toEqual({ parent_span_id: zeros, kind: "SPAN_KIND_CLIENT" });
    const full = fullOtelDump(call.otel_dump!, call);
    expect(full).toMatchObject({
      scope: { name: "openinference.instrumentation.openai", version: "0.1.2" },
      trace_id: TRACE_ID,
      span_id: SPAN_ID,
      parent_span_id: zeros,
      name: "chat gpt-4o",
      start_time_unix_nano: "1700000000123456000",
      end_time_unix_nano: "1700000001000000000",
    });
    const storedBefore: JsonObject = {
      resource: { attributes: IN_CALL_RESOURCE },
      scope: { name: "openinference.instrumentation.openai", version: "0.1.2" },
      trace_id: TRACE_ID,
      span_id: SPAN_ID,
      parent_span_id: zeros,
      name: "chat gpt-4o",
      kind: "SPAN_KIND_CLIENT",
      start_time_unix_nano: "1700000000123456000",
      end_time_unix_nano: "1700000001000000000",
      attributes: IN_CALL_ATTRIBUTES,
    };
    expect(fullOtelDump(storedBefore, call)).toEqual(full);
    const namingTheCall: JsonObject = { resource: { attributes: IN_CALL_RESOURCE }, parent_span_id: zeros, kind: "SPAN_KIND_CLIENT", attributes: IN_CALL_ATTRIBUTES };
    expect(fullOtelDump(namingTheCall, call)).toEqual(full);
  });

  it("stores the flat attributes when a value is a key-value list (nesting could not tell it from dotted keys)", () => {
    const { call } = mapAttributes({ "a.b": 1, a: { c: 2 } });
    expect(call.otel_dump?.["attributes"]).toEqual({ "a.b": 1, a: { c: 2 } });
    expect(fullOtelDump(call.otel_dump!, call)["attributes"]).toEqual({ "a.b": 1, a: { c: 2 } });
  });

  it("gives back any attributes without key-value lists exactly", () => {
    const key = fc.array(fc.constantFrom("a", "b", "", "x.y", ".", "__proto__", "gen_ai"), { minLength: 1, maxLength: 4 }).map((parts) => parts.join("."));
    const value = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant({ k: 1 })), { maxLength: 3 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(key, value), { maxLength: 12 }), (pairs) => {
        const attributes: JsonObject = {};
        for (const [k, v] of pairs) Object.defineProperty(attributes, k, { value: v, enumerable: true, writable: true, configurable: true });
        const { call } = mapAttributes(attributes);
        const stored = JSON.parse(JSON.stringify(call.otel_dump)) as JsonObject;
        const callAttributes = JSON.parse(JSON.stringify(call.attributes)) as JsonObject;
        expect(stored).not.toHaveProperty("attributes");
        expect(fullOtelDump(stored, { ...call, attributes: callAttributes })["attributes"]).toEqual(JSON.parse(JSON.stringify(attributes)));
      }),
    );
  });
});
