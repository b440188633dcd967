/**
 * `otel_dump`: the whole span as received, with its resource and scope, as JSON. Field
 * names are the OTLP proto names (snake_case); attributes stay flat (keys as sent); times
 * are decimal strings of nanoseconds (full precision); enums are their OTLP names
 * (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`), or the number when unknown; ids are hex and a
 * root span has `parent_span_id: null`.
 *
 * Stored without what the call keeps already: the span's attributes are written as the
 * string IN_CALL_ATTRIBUTES and the resource's as IN_CALL_RESOURCE when their nested form
 * in the call's `attributes.otel` gives them back exactly, which holds unless a value is
 * itself a key-value list (then the flat attributes are stored); and fields at their OTLP
 * default (0, "", no events, no links, no parent, unset status) are left out, as protobuf
 * leaves them out. `fullOtelDump` gives back the dump as received.
 */
import { SPAN_KIND_NAMES, STATUS_CODE_NAMES, type OtlpAttributes, type OtlpResourceGroup, type OtlpScopeGroup, type OtlpSpan } from "./batch.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json.js";
import { setOwn } from "./nest.js";

export const IN_CALL_ATTRIBUTES = "$attributes.otel.attributes";
export const IN_CALL_RESOURCE = "$attributes.otel.resource";

/** Whether nestDottedKeys' output flattens back to exactly these attributes: no value is an object. */
export function rebuildable(attributes: OtlpAttributes): boolean {
  for (const key in attributes) if (isJsonObject(attributes[key] ?? null)) return false;
  return true;
}

/**
 * The dump of a span. `resourceInCall`: the resource's attributes are `rebuildable` (the
 * caller checks once per resource).
 */
export function otelDump(resource: OtlpResourceGroup, group: OtlpScopeGroup, span: OtlpSpan, resourceInCall = false): JsonObject {
  return withoutDefaults(wholeDump(resource, group, span, resourceInCall), DUMP_DEFAULTS);
}

function wholeDump(resource: OtlpResourceGroup, group: OtlpScopeGroup, span: OtlpSpan, resourceInCall: boolean): JsonObject {
  return {
    resource: {
      attributes: resourceInCall ? IN_CALL_RESOURCE : resource.attributes,
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
    attributes: rebuildable(span.attributes) ? IN_CALL_ATTRIBUTES : span.attributes,
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

/** The fields of a dump left out at these values (objects: their own fields, each left out at its default). */
const DUMP_DEFAULTS: JsonObject = {
  resource: { dropped_attributes_count: 0, schema_url: "" },
  scope: { name: "", version: "", attributes: {}, dropped_attributes_count: 0, schema_url: "" },
  parent_span_id: null,
  trace_state: "",
  flags: 0,
  dropped_attributes_count: 0,
  events: [],
  dropped_events_count: 0,
  links: [],
  dropped_links_count: 0,
  status: { code: STATUS_CODE_NAMES[0] ?? 0, message: "" },
};

const isEmpty = (value: JsonValue): boolean => (Array.isArray(value) ? value.length === 0 : isJsonObject(value) && Object.keys(value).length === 0);

function withoutDefaults(whole: JsonObject, defaults: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(whole)) {
    const value = whole[key] ?? null;
    const fallback = defaults[key];
    if (fallback === undefined) {
      setOwn(out, key, value);
    } else if (isJsonObject(fallback) && !isEmpty(fallback) && isJsonObject(value)) {
      const inner = withoutDefaults(value, fallback);
      if (!isEmpty(inner)) setOwn(out, key, inner);
    } else if (!(value === fallback || (isEmpty(value) && isEmpty(fallback) && Array.isArray(value) === Array.isArray(fallback)))) {
      setOwn(out, key, value);
    }
  }
  return out;
}

function withDefaults(dump: JsonObject, defaults: JsonObject): JsonObject {
  const out: JsonObject = { ...dump };
  for (const key of Object.keys(defaults)) {
    const fallback = defaults[key] ?? null;
    const value = dump[key];
    if (isJsonObject(fallback) && !isEmpty(fallback)) out[key] = withDefaults(isJsonObject(value) ? value : {}, fallback);
    else if (value === undefined) out[key] = fallback;
  }
  return out;
}

/** The dump as received: defaults and the attributes left out put back (from the call's `attributes.otel`). */
export function fullOtelDump(stored: JsonObject, callAttributes: JsonObject): JsonObject {
  const dump = withDefaults(stored, DUMP_DEFAULTS);
  const otel = callAttributes["otel"];
  const kept = isJsonObject(otel) ? otel : {};
  const out: JsonObject = { ...dump };
  if (dump["attributes"] === IN_CALL_ATTRIBUTES) out["attributes"] = flattened(kept["attributes"]);
  const resource = dump["resource"];
  if (isJsonObject(resource) && resource["attributes"] === IN_CALL_RESOURCE) out["resource"] = { ...resource, attributes: flattened(kept["resource"]) };
  return out;
}

/** `{a: {b: 1}}` → `{"a.b": 1}`: the inverse of nestDottedKeys for attributes whose values are no objects. */
function flattened(nested: JsonValue | undefined): JsonObject {
  const out: JsonObject = {};
  const walk = (node: JsonObject, prefix: string): void => {
    for (const key of Object.keys(node)) {
      const value = node[key] ?? null;
      if (isJsonObject(value)) walk(value, `${prefix}${key}.`);
      else setOwn(out, `${prefix}${key}`, value);
    }
  };
  if (isJsonObject(nested)) walk(nested, "");
  return out;
}
