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
 *   FORMAT byte; the headers: one JSON array, each event without its JSON fields (a null
 *   otel_dump stays in it); then per event: its field count, then per field: field id (index
 *   in JSON_FIELDS), JSON text, its length in UTF-16 units, 1 if an object, 1 if leaves
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

function encode(events: readonly TraceEvent[]): Buffer {
  const headers: Record<string, unknown>[] = [];
  const fields: unknown[][] = [];
  for (const event of events) {
    const header: Record<string, unknown> = {};
    const own: unknown[] = [];
    for (const key in event) {
      const value: unknown = event[key as keyof TraceEvent];
      const id = FIELD_IDS[key];
      if (id === undefined || value === null || value === undefined) header[key] = value;
      else own.push(id, value instanceof EncodedJson ? value.value() : value);
    }
    headers.push(header);
    fields.push(own);
  }
  const out = new RowBinaryWriter(events.length * EVENT_BYTES_GUESS + 16);
  out.uint8(FORMAT).string(JSON.stringify(headers));
  for (const own of fields) {
    out.arrayLength(own.length / 2);
    for (let i = 0; i < own.length; i += 2) writeField(out, own[i] as number, own[i + 1]);
  }
  return out.bytes();
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

export const traceRecordCodec: RecordCodec<TraceEvent> = { encode, decode };

/** The call events topic: ingest publishes to it, the worker writes what it reads. */
export function traceEventsTopic(name: string): Topic<TraceEvent> {
  return { name, key: eventKey, schema: TraceEventSchema, accepts: isTraceEvent, records: traceRecordCodec };
}
