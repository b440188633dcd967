import { z } from "zod";
import type { Topic } from "../queue.js";

/**
 * The payload of one log record: one request's messages, as a JSON array. Encoded in the
 * request's thread, decoded by the consumer (read back from the log, or handed over).
 *
 * A topic whose schema is a discriminated union of objects (the call events) writes each
 * message positionally: an array of its fields' values in its schema's key order, the
 * discriminator first. Without the key names a call part's record is smaller and quicker to
 * encode and parse (`bench/hotpath.bench.ts`). A message that would not come back the
 * same (a key outside its schema, an absent field before a present one) is written as its
 * object; records hold either form, per message, and records of objects (written before)
 * read as they always did.
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

/** Per discriminator value, the keys of its object: the discriminator first, then the schema's order. */
interface Layouts {
  readonly discriminator: string;
  readonly keys: ReadonlyMap<unknown, readonly string[]>;
}

export function recordCodecOf<T>(topic: Topic<T>): RecordCodec<T> {
  const accepts = topic.accepts ?? ((value: unknown): value is T => topic.schema.safeParse(value).success);
  const layouts = layoutsOf(topic.schema);
  return {
    encode: (messages) => Buffer.from(JSON.stringify(layouts ? messages.map((m) => toTuple(m as Fields, layouts) ?? m) : messages)),
    decode: (payload) => decodeRecord(payload, accepts, layouts),
  };
}

function layoutsOf(schema: z.ZodType): Layouts | null {
  if (!(schema instanceof z.ZodDiscriminatedUnion)) return null;
  const discriminator = schema.def.discriminator;
  const keys = new Map<unknown, readonly string[]>();
  for (const option of schema.options) {
    if (!(option instanceof z.ZodObject)) return null;
    const literal = option.shape[discriminator];
    if (!(literal instanceof z.ZodLiteral) || literal.def.values.length !== 1) return null;
    keys.set(literal.def.values[0], [discriminator, ...Object.keys(option.shape).filter((key) => key !== discriminator)]);
  }
  return { discriminator, keys };
}

/** The message's values in its layout's order (trailing absent fields left off), or null when that would not read back the same. */
function toTuple(message: Fields, layouts: Layouts): unknown[] | null {
  const keys = layouts.keys.get(message[layouts.discriminator]);
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
  const keys = layouts.keys.get(tuple[0]);
  if (!keys || tuple.length > keys.length) return tuple;
  const message: Fields = {};
  for (let i = 0; i < tuple.length; i++) message[keys[i]!] = tuple[i];
  return message;
}

export function decodeRecord<T>(payload: Buffer, accepts: (value: unknown) => value is T, layouts: Layouts | null = null): DecodedPayload<T> {
  const text = payload.toString("utf8");
  let values: unknown;
  try {
    values = JSON.parse(text);
  } catch {
    return { messages: [], malformed: [text] };
  }
  let list: unknown[] = Array.isArray(values) ? values : [values];
  if (layouts) list = list.map((value) => (Array.isArray(value) ? fromTuple(value, layouts) : value));
  const messages = list.filter(accepts);
  if (messages.length === list.length) return { messages };
  return { messages, malformed: list.filter((m) => !accepts(m)) };
}
