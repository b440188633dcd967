/**
 * `otel_dump`: the whole span as received, with its resource and scope, as JSON. Field
 * names are the OTLP proto names (snake_case); attributes stay flat (keys as sent); times
 * are decimal strings of nanoseconds (full precision); enums are their OTLP names
 * (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`), or the number when unknown; ids are hex and a
 * root span has `parent_span_id: null`.
 *
 * Stored without what the call keeps already: the span's attributes and the resource's are
 * left out when their nested form in the call's `attributes.otel` gives them back exactly,
 * which holds unless a value is itself a key-value list (then the flat attributes are stored;
 * dumps stored before name them by the strings IN_CALL_ATTRIBUTES and IN_CALL_RESOURCE
 * instead of leaving them out, and read back the same); the ids, the name and the
 * scope's name and version are the call's own (`trace_id`, `id`, `parent_id`, `op_name`,
 * `attributes.otel.scope`), so left out, as are the times when they are whole microseconds
 * (then the call's `started_at` and `ended_at` hold them); a parent id the call does not
 * hold (all zeros: a root) is kept. Fields at their OTLP default (0, "", no events, no links,
 * no parent, unset status) are left out, as protobuf leaves them out. `fullOtelDump` gives
 * back the dump as received, from the stored dump and the call's row; dumps stored before
 * (with every field) read back the same.
 */
import { SPAN_KIND_NAMES, STATUS_CODE_NAMES, type OtlpAttributes, type OtlpEvent, type OtlpLink, type OtlpResourceGroup, type OtlpScopeGroup, type OtlpSpan, type OtlpStatus } from "./batch.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";
import { hasObjectValue, setOwn } from "./nest.js";

/** What dumps stored before named the call's span and resource attributes by (now left out). */
export const IN_CALL_ATTRIBUTES = "$attributes.otel.attributes";
export const IN_CALL_RESOURCE = "$attributes.otel.resource";

/** Whether nestDottedKeys' output flattens back to exactly these attributes: no value is an object. */
function rebuildable(attributes: OtlpAttributes): boolean {
  return !hasObjectValue(attributes);
}

/** What a call's row holds of its span beside the dump (fullOtelDump takes them from there). */
export interface SpanInCall {
  readonly trace_id: string;
  readonly id: string;
  readonly parent_id: string | null;
  readonly op_name: string;
  /** Microseconds since the epoch. */
  readonly started_at: number;
  readonly ended_at: number | null;
  readonly attributes: JsonObject;
}

/**
 * What the dumps of a scope group's spans share, the same objects in every dump: its
 * resource's `resourceDump` (made once per resource) and its `scopeDump`.
 */
export interface GroupDump {
  readonly resource: JsonObject;
  readonly scope: JsonObject | null;
}

/**
 * The dump of a span, built without its defaults (DUMP_DEFAULTS) and without what the call
 * holds. `shared`: what its group's dumps share; `parentInCall`: the call's `parent_id`.
 */
export function otelDump(shared: GroupDump, span: OtlpSpan, parentInCall: string | null): JsonObject {
  const dump: JsonObject = {};
  if (hasKeys(shared.resource)) dump["resource"] = shared.resource;
  if (shared.scope !== null) dump["scope"] = shared.scope;
  if (span.parentSpanId !== "" && span.parentSpanId !== parentInCall) dump["parent_span_id"] = span.parentSpanId;
  if (span.traceState !== "") dump["trace_state"] = span.traceState;
  if (span.flags !== 0) dump["flags"] = span.flags;
  dump["kind"] = SPAN_KIND_NAMES[span.kind] ?? span.kind;
  if (span.startTimeUnixNano % 1000n !== 0n) dump["start_time_unix_nano"] = span.startTimeUnixNano.toString();
  if (span.endTimeUnixNano % 1000n !== 0n) dump["end_time_unix_nano"] = span.endTimeUnixNano.toString();
  if (!rebuildable(span.attributes)) dump["attributes"] = span.attributes;
  if (span.droppedAttributesCount !== 0) dump["dropped_attributes_count"] = span.droppedAttributesCount;
  if (span.events.length > 0) dump["events"] = span.events.map(eventDump);
  if (span.droppedEventsCount !== 0) dump["dropped_events_count"] = span.droppedEventsCount;
  if (span.links.length > 0) dump["links"] = span.links.map(linkDump);
  if (span.droppedLinksCount !== 0) dump["dropped_links_count"] = span.droppedLinksCount;
  const status = statusDump(span.status);
  if (status !== null) dump["status"] = status;
  return dump;
}

/** The resource without what the call holds: its attributes when they are `rebuildable` from `attributes.otel.resource`. */
export function resourceDump(resource: OtlpResourceGroup): JsonObject {
  const out: JsonObject = {};
  if (!rebuildable(resource.attributes)) out["attributes"] = resource.attributes;
  if (resource.droppedAttributesCount !== 0) out["dropped_attributes_count"] = resource.droppedAttributesCount;
  if (resource.schemaUrl !== "") out["schema_url"] = resource.schemaUrl;
  return out;
}

/** The scope without its name and version (the call's `attributes.otel.scope`), null when nothing is left. */
export function scopeDump(group: OtlpScopeGroup): JsonObject | null {
  const { scope } = group;
  const out: JsonObject = {};
  let empty = true;
  if (hasKeys(scope.attributes)) (out["attributes"] = scope.attributes), (empty = false);
  if (scope.droppedAttributesCount !== 0) (out["dropped_attributes_count"] = scope.droppedAttributesCount), (empty = false);
  if (group.schemaUrl !== "") (out["schema_url"] = group.schemaUrl), (empty = false);
  return empty ? null : out;
}

function eventDump(e: OtlpEvent): JsonObject {
  return { time_unix_nano: e.timeUnixNano.toString(), name: e.name, attributes: e.attributes, dropped_attributes_count: e.droppedAttributesCount };
}

function linkDump(l: OtlpLink): JsonObject {
  return { trace_id: l.traceId, span_id: l.spanId, trace_state: l.traceState, attributes: l.attributes, dropped_attributes_count: l.droppedAttributesCount, flags: l.flags };
}

function statusDump(status: OtlpStatus): JsonObject | null {
  const code = STATUS_CODE_NAMES[status.code] ?? status.code;
  if (code === STATUS_CODE_NAMES[0] && status.message === "") return null;
  const out: JsonObject = {};
  if (code !== STATUS_CODE_NAMES[0]) out["code"] = code;
  if (status.message !== "") out["message"] = status.message;
  return out;
}

function hasKeys(attributes: OtlpAttributes): boolean {
  for (const _key in attributes) return true;
  return false;
}

/** The fields of a dump left out at these values (objects: their own fields, each left out at its default); otelDump leaves them out, fullOtelDump puts them back. */
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

/** The dump as received: what the call holds (its ids, name, times and `attributes.otel`) and the defaults put back. */
export function fullOtelDump(stored: JsonObject, call: SpanInCall): JsonObject {
  const otel = call.attributes["otel"];
  const kept = isJsonObject(otel) ? otel : {};
  const keptScope = isJsonObject(kept["scope"]) ? kept["scope"] : {};
  const storedScope = isJsonObject(stored["scope"]) ? stored["scope"] : {};
  const dump = withDefaults(
    {
      trace_id: call.trace_id,
      span_id: call.id,
      parent_span_id: call.parent_id,
      name: call.op_name,
      start_time_unix_nano: nanosText(call.started_at),
      end_time_unix_nano: call.ended_at === null ? null : nanosText(call.ended_at),
      ...stored,
      scope: { name: keptScope["name"] ?? "", version: keptScope["version"] ?? "", ...storedScope },
    },
    DUMP_DEFAULTS,
  );
  const out: JsonObject = { ...dump };
  if (inCall(dump["attributes"], IN_CALL_ATTRIBUTES)) out["attributes"] = flattened(kept["attributes"]);
  const resource = dump["resource"];
  if (isJsonObject(resource) && inCall(resource["attributes"], IN_CALL_RESOURCE)) out["resource"] = { ...resource, attributes: flattened(kept["resource"]) };
  return out;
}

/** Whether a dump's attributes are the call's: left out, or named by `marker` (dumps stored before). */
const inCall = (stored: JsonValue | undefined, marker: string): boolean => stored === undefined || stored === marker;

/** Microseconds since the epoch as the decimal text of nanoseconds. */
const nanosText = (micros: number): string => (BigInt(micros) * 1000n).toString();

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
