import { JSON_PARTS, type JsonPart } from "../jsonLeaves.js";
import { isJsonObject } from "../json.js";
import { RowBinaryWriter } from "../rowBinaryWriter.js";
import { decodeRecord } from "./durableLog/recordCodec.js";
import { BinaryReader, EncodedJson, writeLeaves } from "./encodedJson.js";
import { eventKey, isTraceEvent, TraceEventSchema, type TraceEvent } from "./events.js";
import type { DecodedPayload, RecordCodec, Topic } from "./topic.js";

/**
 * The durable log's record of call events. The request's thread already holds each event's
 * JSON fields parsed; it writes them once as JSON text and flattened leaves, in the form the
 * worker's `calls` rows hold them (encodedJson.ts), so that the worker parses only the
 * events' small headers and copies the rest into its inserts.
 *
 * Layout (LEB128 lengths and counts, strings as length + UTF-8):
 *   FORMAT byte; the headers: one JSON array, each event without its JSON fields; then per
 *   event: its field count, then per field that is not null: field id (index in
 *   JSON_FIELDS), JSON text, its length in UTF-16 units, 1 if an object, 1 if leaves
 *   follow, then the leaves (encodedJson.ts, writeLeaves).
 * Records written before this layout are JSON arrays (first byte `[`) and still read.
 */

const FORMAT = 0x01;
const JSON_FIELDS = ["attributes", "inputs", "otel_dump", "output", "summary"] as const;
type JsonFieldName = (typeof JSON_FIELDS)[number];
const FIELD_IDS: Readonly<Record<string, number>> = Object.fromEntries(JSON_FIELDS.map((name, id) => [name, id]));
const FLATTENED: readonly boolean[] = JSON_FIELDS.map((name) => (JSON_PARTS as readonly string[]).includes(name));
/** Bytes per event the first guess of a record's size allows (grown when short). */
const EVENT_BYTES_GUESS = 1024;

/**
 * Every key of every event kind that is not a JSON field: JSON.stringify with this list
 * writes the headers natively, without copying each event into a header object. Made from
 * TraceEventSchema, so a field added to the events is never left out.
 */
const HEADER_KEYS: readonly string[] = [
  ...new Set(TraceEventSchema.options.flatMap((option) => Object.keys(option.shape)).filter((key) => FIELD_IDS[key] === undefined)),
];

function encode(events: readonly TraceEvent[]): Buffer {
  const out = new RowBinaryWriter(events.length * EVENT_BYTES_GUESS + 16);
  out.uint8(FORMAT).string(JSON.stringify(events, HEADER_KEYS as string[]));
  for (const event of events) writeFields(out, event as Partial<Record<JsonFieldName, unknown>>);
  return out.bytes();
}

function writeFields(out: RowBinaryWriter, event: Partial<Record<JsonFieldName, unknown>>): void {
  let count = 0;
  for (const name of JSON_FIELDS) if (event[name] !== undefined && event[name] !== null) count++;
  out.arrayLength(count);
  for (let id = 0; id < JSON_FIELDS.length; id++) {
    const value = event[JSON_FIELDS[id]!];
    if (value !== undefined && value !== null) writeField(out, id, value instanceof EncodedJson ? value.value() : value);
  }
}

function writeField(out: RowBinaryWriter, id: number, value: unknown): void {
  const text = JSON.stringify(value);
  out.uint8(id).string(text).arrayLength(text.length).uint8(isJsonObject(value) ? 1 : 0);
  if (!FLATTENED[id]) {
    out.uint8(0);
    return;
  }
  out.uint8(1);
  writeLeaves(out, value, JSON_FIELDS[id] as JsonPart);
}

function decode(payload: Buffer): DecodedPayload<TraceEvent> {
  if (payload[0] !== FORMAT) return decodeRecord(payload, isTraceEvent);
  const messages: TraceEvent[] = [];
  const malformed: unknown[] = [];
  try {
    const reader = new BinaryReader(payload);
    reader.byte();
    const place = reader.text();
    const headers = JSON.parse(payload.toString("utf8", place.start, place.end)) as Record<string, unknown>[];
    for (const event of headers) {
      readFields(reader, event);
      restoreNulls(event);
      if (isTraceEvent(event)) messages.push(event);
      else malformed.push(event);
    }
  } catch (err) {
    malformed.push({ undecodable_record: payload.toString("base64"), error: err instanceof Error ? err.message : String(err) });
  }
  return malformed.length === 0 ? { messages } : { messages, malformed };
}

function readFields(reader: BinaryReader, event: Record<string, unknown>): void {
  const fields = reader.varUInt();
  for (let i = 0; i < fields; i++) {
    const name: JsonFieldName | undefined = JSON_FIELDS[reader.byte()];
    if (!name) throw new RangeError("unknown field id");
    const stringStart = reader.position;
    const text = reader.text();
    const chars = reader.varUInt();
    const isObject = reader.byte() === 1;
    const leaves = reader.byte() === 1 ? reader.leaves() : null;
    event[name] = new EncodedJson(reader.buffer, stringStart, text.start, text.end, chars, isObject, leaves);
  }
}

/** A null JSON field is written nowhere: the kinds that have it get it back. */
function restoreNulls(event: Record<string, unknown>): void {
  if (event.kind === "call_start" || event.kind === "call_complete") event.otel_dump ??= null;
  if (event.kind === "call_end" || event.kind === "call_complete") event.output ??= null;
}

export const traceRecordCodec: RecordCodec<TraceEvent> = { encode, decode };

/** The call events topic: ingest publishes to it, the worker writes what it reads. */
export function traceEventsTopic(name: string): Topic<TraceEvent> {
  return { name, key: eventKey, schema: TraceEventSchema, accepts: isTraceEvent, records: traceRecordCodec };
}
