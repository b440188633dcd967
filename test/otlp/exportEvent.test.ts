/**
 * An OTLP export logged as one event: the worker's mapping of it gives exactly the calls that
 * mapping the export at ingest gives, and a batch of exports is written in parts, in order.
 */
import { describe, expect, it } from "vitest";
import { decodeRequest } from "../../services/otlp/decode.js";
import { checkExport, exportedCalls, loggedExport, otlpExportEvent, type ExportSource } from "../../services/otlp/exportEvent.js";
import { checkSpans, mapSpans } from "../../services/otlp/mapSpan.js";
import type { CallUpdateEvent, OtlpExportEvent, TraceEvent } from "../../services/queue/events.js";
import { callEventParts, EXPORTED_CALLS_PER_WRITE } from "../../services/worker/callWorker.js";
import { idMaker, jsonBody, protobufBody, type RequestSpec } from "./httpSupport.js";

const T0 = 1_700_000_000_000_000_000n;
const ids = idMaker("e");

function spans(count: number, attributes: Record<string, string | number> = { "gen_ai.request.model": "m", "input.value": "question" }): RequestSpec {
  const traceId = ids.trace();
  return { resource: { "service.name": "svc" }, spans: Array.from({ length: count }, (_, i) => ({ traceId, spanId: ids.span(), name: `s${i}`, start: T0 + BigInt(i), end: T0 + BigInt(i) + 5_000n, attributes })) };
}

function logged(spec: RequestSpec, format: "protobuf" | "json" = "protobuf", maxSpanBytes = 1 << 20): { event: OtlpExportEvent; source: ExportSource } {
  const body = format === "protobuf" ? protobufBody(spec) : Buffer.from(jsonBody(spec));
  const source: ExportSource = { project_id: "acme/otel", wb_user_id: "alice", format, body, maxSpanBytes };
  // As ingest logs it (ingest/otlp/export.ts).
  const { logged: asLogged, batch } = loggedExport(source);
  const event = otlpExportEvent(asLogged, checkExport(asLogged, batch));
  if (!event) throw new Error("no span accepted");
  return { event, source };
}

describe("an OTLP export logged as one event", () => {
  it.each(["protobuf", "json"] as const)("maps, in the worker, to the calls that mapping it at ingest gives (%s)", (format) => {
    const spec = spans(3);
    spec.spans[1]!.traceId = "0".repeat(32); // rejected, at ingest and in the worker
    const { event, source } = logged(spec, format);
    // An OTLP/JSON export is logged as protobuf, which reads back to the same spans.
    expect(event).toMatchObject({ kind: "otlp_export", project_id: "acme/otel", id: spec.spans[0]!.spanId, wb_user_id: "alice", format: "protobuf", spans: 2, max_span_bytes: 1 << 20 });
    if (format === "protobuf") expect(Buffer.from(event.body).equals(source.body)).toBe(true);
    else expect(decodeRequest("protobuf", Buffer.from(event.body))).toEqual(decodeRequest("json", source.body));
    const atIngest = mapSpans(decodeRequest(format, source.body), { ...source });
    expect(atIngest.events.map((c) => c.id)).toEqual([spec.spans[0]!.spanId, spec.spans[2]!.spanId]);
    expect(exportedCalls(event)).toEqual(atIngest.events);
  });

  it("is logged as received when protobuf cannot carry its spans (an id that is not hex)", () => {
    const spec = spans(2);
    spec.spans[0]!.spanId = "not-hex"; // rejected, at ingest and in the worker
    const { event, source } = logged(spec, "json");
    expect(event).toMatchObject({ format: "json", id: spec.spans[1]!.spanId, spans: 1 });
    expect(Buffer.from(event.body).equals(source.body)).toBe(true);
    expect(exportedCalls(event).map((c) => c.id)).toEqual([spec.spans[1]!.spanId]);
  });

  it("is not made when no span is accepted", () => {
    const spec = spans(2);
    for (const span of spec.spans) span.end = span.start - 1n;
    const body = protobufBody(spec);
    const checked = checkSpans(decodeRequest("protobuf", body), 1 << 20);
    expect(checked.accepted).toBe(0);
    expect(otlpExportEvent({ project_id: "acme/otel", wb_user_id: "alice", format: "protobuf", body, maxSpanBytes: 1 << 20 }, checked)).toBeNull();
  });

  it("refuses to map an export whose spans are not those it was checked with (a dead letter, not a silent loss)", () => {
    const spec = spans(3, { "input.value": "x".repeat(300) });
    spec.spans[0]!.traceId = "0".repeat(32);
    const { event } = logged(spec);
    expect(() => exportedCalls({ ...event, max_span_bytes: 100 })).toThrow("0 spans mapped, 2 were accepted");
  });

  it("maps every span of an export whose spans were all accepted at ingest, without checking them again", () => {
    const { event } = logged(spans(2, { "input.value": "x".repeat(300) }));
    expect(exportedCalls({ ...event, max_span_bytes: 100 })).toEqual(exportedCalls(event));
    expect(exportedCalls(event)).toHaveLength(2);
  });
});

describe("the worker's parts of a batch with exports", () => {
  it("holds every call in order, in parts of at least EXPORTED_CALLS_PER_WRITE calls but the last", () => {
    const perExport = Math.ceil(EXPORTED_CALLS_PER_WRITE * 0.75);
    const update: CallUpdateEvent = { kind: "call_update", project_id: "acme/otel", id: "x", display_name: "renamed", updated_at: 1 };
    const exports = Array.from({ length: 5 }, () => logged(spans(perExport)).event);
    const batch: TraceEvent[] = [exports[0]!, update, exports[1]!, exports[2]!, exports[3]!, exports[4]!];
    const parts = [...callEventParts(batch)];
    const expected = [...exportedCalls(exports[0]!).map((c) => c.id), "x", ...exports.slice(1).flatMap((e) => exportedCalls(e).map((c) => c.id))];
    expect(parts.flat().map((e) => ("id" in e ? e.id : null))).toEqual(expected);
    // Two exports and the update reach the bound, then two exports, then the last one.
    expect(parts.map((p) => p.length)).toEqual([2 * perExport + 1, 2 * perExport, perExport]);
    for (const part of parts.slice(0, -1)) expect(part.length).toBeGreaterThanOrEqual(EXPORTED_CALLS_PER_WRITE);
  });

  it("leaves a batch without exports whole, as it came", () => {
    const update: CallUpdateEvent = { kind: "call_update", project_id: "acme/otel", id: "x", display_name: "renamed", updated_at: 1 };
    const batch = [update, { ...update, id: "y" }];
    expect([...callEventParts(batch)]).toEqual([batch]);
    expect([...callEventParts(batch)][0]).toBe(batch);
  });
});
