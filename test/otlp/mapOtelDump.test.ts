import { describe, it, expect } from "vitest";
import { mapSpans } from "../../services/ingest/otlp/mapSpan.js";
import { CTX, makeSpan, PARENT_ID, SPAN_ID, TRACE_ID } from "./support.js";

describe("mapSpans: otel_dump", () => {
  it("keeps the whole span with its resource and scope", () => {
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
    const [start] = mapSpans(batch, CTX).events;
    expect(start?.kind === "call_start" && start.otel_dump).toEqual({
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
    expect(start?.kind === "call_start" && start.otel_dump).toMatchObject({ parent_span_id: null, kind: 9, status: { code: 7, message: "" } });
  });
});
