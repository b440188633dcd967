/**
 * `otel_dump`: the whole span as received, with its resource and scope, as JSON. Field
 * names are the OTLP proto names (snake_case); attributes stay flat (keys as sent); times
 * are decimal strings of nanoseconds (full precision); enums are their OTLP names
 * (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`), or the number when unknown; ids are hex and a
 * root span has `parent_span_id: null`.
 */
import { SPAN_KIND_NAMES, STATUS_CODE_NAMES, type OtlpResourceGroup, type OtlpScopeGroup, type OtlpSpan } from "./batch.js";
import type { JsonObject } from "../../json.js";

export function otelDump(resource: OtlpResourceGroup, group: OtlpScopeGroup, span: OtlpSpan): JsonObject {
  return {
    resource: {
      attributes: resource.attributes,
      dropped_attributes_count: resource.droppedAttributesCount,
      schema_url: resource.schemaUrl,
    },
    scope: {
      name: group.scope.name,
      version: group.scope.version,
      attributes: group.scope.attributes,
      dropped_attributes_count: group.scope.droppedAttributesCount,
      schema_url: group.schemaUrl,
    },
    trace_id: span.traceId,
    span_id: span.spanId,
    parent_span_id: span.parentSpanId === "" ? null : span.parentSpanId,
    trace_state: span.traceState,
    flags: span.flags,
    name: span.name,
    kind: SPAN_KIND_NAMES[span.kind] ?? span.kind,
    start_time_unix_nano: span.startTimeUnixNano.toString(),
    end_time_unix_nano: span.endTimeUnixNano.toString(),
    attributes: span.attributes,
    dropped_attributes_count: span.droppedAttributesCount,
    events: span.events.map((e) => ({
      time_unix_nano: e.timeUnixNano.toString(),
      name: e.name,
      attributes: e.attributes,
      dropped_attributes_count: e.droppedAttributesCount,
    })),
    dropped_events_count: span.droppedEventsCount,
    links: span.links.map((l) => ({
      trace_id: l.traceId,
      span_id: l.spanId,
      trace_state: l.traceState,
      attributes: l.attributes,
      dropped_attributes_count: l.droppedAttributesCount,
      flags: l.flags,
    })),
    dropped_links_count: span.droppedLinksCount,
    status: { code: STATUS_CODE_NAMES[span.status.code] ?? span.status.code, message: span.status.message },
  };
}
