import { z } from "zod";
import { bytesFieldsOf, replacingBytes, restoreBytes, type BytesFields } from "../../bytesFields.js";
import { arrayLines, arrayLinesBytes, parseJsonBytes, writeArrayLines } from "../../jsonArrayLines.js";
import type { Topic } from "../../queue.js";

/**
 * The payload of one log record: one request's messages, as a JSON array, a message per line
 * (queue/jsonArrayLines.ts; records written before as one line read as well). Encoded in the
 * request's thread, decoded by the consumer (read back from the log, or handed over).
 *
 * A topic whose schema is a discriminated union of objects (the call events) writes each
 * message positionally: an array of its fields' values in its schema's key order, the
 * discriminator first. Without the key names a call part's record is smaller and quicker to
 * encode and parse (`bench/hotpath.bench.ts`). A message that would not come back the
 * same (a key outside its schema, an absent field before a present one) is written as its
 * object; records hold either form, per message, and records of objects (written before)
 * read as they always did.
 *
 * Bytes fields (queue/bytesFields.ts: an OTLP export's body) are not written into the JSON:
 * the record is then `RECORD_WITH_BYTES`, the JSON's length (UInt32 LE), the JSON, and each
 * field's bytes as they are (length, UInt32 LE, then the bytes), the JSON holding each one's
 * index. A JSON record starts with `[`, so the first byte tells the two apart; a bytes field
 * in a JSON record (written before) is base64. The bytes are never encoded to text or copied
 * into a string. A record read back hands each field on as a copy of its own bytes (a
 * Uint8Array of its own, not a Buffer, which may share a pool's slab), not as a view of what
 * was read: a view would keep the whole read (megabytes of other records) alive
 * for as long as its message lives, which is until its batch is stored, and would send all of
 * it to a writer thread with the batch. Those buffers then died only in V8's full collections,
 * which raised the service's peak RSS under OTLP (docs/benchmarks.md, "Bytes fields read back
 * as copies").
 */

/** A record's messages, and the values in it that are not messages of the topic (set aside). */
export interface DecodedPayload<T> {
  readonly messages: T[];
  readonly malformed?: readonly unknown[];
}

export interface RecordCodec<T> {
  encode(messages: readonly T[]): Buffer;
  decode(payload: Buffer): DecodedPayload<T>;
}

type Fields = Record<string, unknown>;

/** The keys of one kind of message: the discriminator first, then the schema's order. */
interface Layout {
  readonly keys: readonly string[];
  /** `objectMaker`'s functions, per tuple length, each made once. */
  readonly makers: ((tuple: readonly unknown[]) => Fields)[];
}

/** Per discriminator value, its layout. */
interface Layouts {
  readonly discriminator: string;
  readonly byKind: ReadonlyMap<unknown, Layout>;
}

/** The first byte of a record with bytes fields kept apart (a JSON record's is `[`). */
const RECORD_WITH_BYTES = 0x01;

export function recordCodecOf<T>(topic: Topic<T>): RecordCodec<T> {
  const accepts = topic.accepts ?? ((value: unknown): value is T => topic.schema.safeParse(value).success);
  const layouts = layoutsOf(topic.schema);
  const bytes = bytesFieldsOf(topic.schema);
  return {
    encode: (messages) => encodeRecord(messages as readonly Fields[], layouts, bytes),
    decode: (payload) => decodeRecord(payload, accepts, layouts, bytes),
  };
}

function encodeRecord(messages: readonly Fields[], layouts: Layouts | null, bytes: BytesFields): Buffer {
  const attachments: Uint8Array[] = [];
  const texts = messages.map((message) => {
    const kept = replacingBytes(message, bytes, (value) => attachments.push(value) - 1);
    return JSON.stringify(layouts ? (toTuple(kept, layouts) ?? kept) : kept);
  });
  if (attachments.length === 0) return arrayLines(texts);
  const jsonBytes = arrayLinesBytes(texts);
  const record = Buffer.allocUnsafe(5 + jsonBytes + attachments.reduce((sum, a) => sum + 4 + a.length, 0));
  record[0] = RECORD_WITH_BYTES;
  record.writeUInt32LE(jsonBytes, 1);
  let at = writeArrayLines(record, 5, texts);
  for (const attachment of attachments) {
    record.writeUInt32LE(attachment.length, at);
    record.set(attachment, at + 4);
    at += 4 + attachment.length;
  }
  return record;
}

/** Where a record's JSON is, and the bytes kept apart from it; null when a record with bytes is cut short. */
function splitRecord(payload: Buffer): { start: number; end: number; attachments: Uint8Array[] } | null {
  if (payload[0] !== RECORD_WITH_BYTES) return { start: 0, end: payload.length, attachments: [] };
  if (payload.length < 5) return null;
  const jsonEnd = 5 + payload.readUInt32LE(1);
  if (jsonEnd > payload.length) return null;
  const attachments: Uint8Array[] = [];
  for (let at = jsonEnd; at < payload.length; ) {
    if (at + 4 > payload.length) return null;
    const end = at + 4 + payload.readUInt32LE(at);
    if (end > payload.length) return null;
    attachments.push(new Uint8Array(payload.subarray(at + 4, end)));
    at = end;
  }
  return { start: 5, end: jsonEnd, attachments };
}

function layoutsOf(schema: z.ZodType): Layouts | null {
  if (!(schema instanceof z.ZodDiscriminatedUnion)) return null;
  const discriminator = schema.def.discriminator;
  const byKind = new Map<unknown, Layout>();
  for (const option of schema.options) {
    if (!(option instanceof z.ZodObject)) return null;
    const literal = option.shape[discriminator];
    if (!(literal instanceof z.ZodLiteral) || literal.def.values.length !== 1) return null;
    byKind.set(literal.def.values[0], { keys: [discriminator, ...Object.keys(option.shape).filter((key) => key !== discriminator)], makers: [] });
  }
  return { discriminator, byKind };
}

/** The message's values in its layout's order (trailing absent fields left off), or null when that would not read back the same. */
function toTuple(message: Fields, layouts: Layouts): unknown[] | null {
  const keys = layouts.byKind.get(message[layouts.discriminator])?.keys;
  if (!keys) return null;
  const tuple: unknown[] = new Array<unknown>(keys.length);
  let present = 0;
  let last = -1;
  for (let i = 0; i < keys.length; i++) {
    const value = message[keys[i]!];
    tuple[i] = value;
    if (value === undefined) continue;
    present++;
    last = i;
  }
  if (present !== definedKeys(message) || present !== last + 1) return null;
  tuple.length = last + 1;
  return tuple;
}

function definedKeys(message: Fields): number {
  let count = 0;
  for (const key in message) if (message[key] !== undefined) count++;
  return count;
}

function fromTuple(tuple: readonly unknown[], layouts: Layouts): unknown {
  const layout = layouts.byKind.get(tuple[0]);
  if (!layout || tuple.length > layout.keys.length) return tuple;
  return objectMaker(layout, tuple.length)(tuple);
}

/**
 * A function that makes the object of a tuple of `length` values of this layout as one object
 * literal: every message of a kind then has one shape, its fields in the object itself, where
 * objects filled key by key keep most of them apart and are slower to read (the worker reads
 * every field of every message).
 */
function objectMaker(layout: Layout, length: number): (tuple: readonly unknown[]) => Fields {
  let make = layout.makers[length];
  if (make === undefined) {
    const fields = layout.keys.slice(0, length).map((key, i) => `${JSON.stringify(key)}: tuple[${i}]`);
    make = layout.makers[length] = new Function("tuple", `return { ${fields.join(", ")} };`) as (tuple: readonly unknown[]) => Fields;
  }
  return make;
}

function decodeRecord<T>(payload: Buffer, accepts: (value: unknown) => value is T, layouts: Layouts | null, bytes: BytesFields): DecodedPayload<T> {
  const split = splitRecord(payload);
  if (split === null) return { messages: [], malformed: [payload.toString("base64")] };
  const { start, end, attachments } = split;
  const parsed = parseJsonBytes(payload, start, end);
  if ("notJson" in parsed) return { messages: [], malformed: [parsed.notJson] };
  let list: unknown[] = Array.isArray(parsed.value) ? parsed.value : [parsed.value];
  if (layouts) list = list.map((value) => (Array.isArray(value) ? fromTuple(value, layouts) : value));
  for (const value of list) restoreBytes(value, bytes, attachments);
  const messages = list.filter(accepts);
  if (messages.length === list.length) return { messages };
  return { messages, malformed: list.filter((m) => !accepts(m)) };
}
