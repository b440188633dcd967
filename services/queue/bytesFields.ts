import { z } from "zod";

/**
 * Message fields that hold bytes (an OTLP export's body). In memory and in a log record they
 * are bytes as they are; in a message's JSON (Kafka's message values, log records written
 * before bytes were kept raw) they are base64. A topic's schema marks them with `bytesField`,
 * and everything that turns messages into JSON and back finds them from it.
 */
export const bytesField = z.custom<Uint8Array>((value) => value instanceof Uint8Array);

/** The bytes fields of each message of a topic, found from its schema. */
export interface BytesFields {
  /** The names of the message's top-level bytes fields (none for most messages). */
  of(message: Readonly<Record<string, unknown>>): readonly string[];
}

const NONE: readonly string[] = [];

/** Reads the schema once: an object's bytes fields, or per discriminator value of a discriminated union of objects. */
export function bytesFieldsOf(schema: z.ZodType): BytesFields {
  const names = (object: z.ZodObject) => Object.keys(object.shape).filter((key) => object.shape[key] === bytesField);
  if (schema instanceof z.ZodObject) {
    const fields = names(schema);
    return { of: () => fields };
  }
  if (!(schema instanceof z.ZodDiscriminatedUnion)) return { of: () => NONE };
  const discriminator = schema.def.discriminator;
  const byKind = new Map<unknown, readonly string[]>();
  for (const option of schema.options) {
    if (!(option instanceof z.ZodObject)) continue;
    const literal = option.shape[discriminator];
    const fields = names(option);
    if (literal instanceof z.ZodLiteral && fields.length > 0) for (const value of literal.def.values) byKind.set(value, fields);
  }
  return { of: (message) => byKind.get(message[discriminator]) ?? NONE };
}

type Fields = Record<string, unknown>;

/** The message with its bytes fields replaced by `replace(bytes)`; the message itself when it has none. */
export function replacingBytes(message: Fields, fields: BytesFields, replace: (bytes: Uint8Array) => unknown): Fields {
  let copy: Fields | null = null;
  for (const name of fields.of(message)) {
    const value = message[name];
    if (!(value instanceof Uint8Array)) continue;
    copy ??= { ...message };
    copy[name] = replace(value);
  }
  return copy ?? message;
}

const isFields = (value: unknown): value is Fields => typeof value === "object" && value !== null && !Array.isArray(value);

/** A message's JSON value: its bytes fields as base64 (any other value as it is). */
export const toJsonValue = (message: unknown, fields: BytesFields): unknown =>
  isFields(message) ? replacingBytes(message, fields, (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")) : message;

/**
 * Restores the bytes fields of a value read back (in place): base64 text is decoded, a number
 * is the index of a record's attachment (`attachments`). Anything else is left for the topic's
 * check to refuse.
 */
export function restoreBytes(value: unknown, fields: BytesFields, attachments: readonly Uint8Array[] = []): void {
  if (!isFields(value)) return;
  for (const name of fields.of(value)) {
    const field = value[name];
    if (typeof field === "string") value[name] = Buffer.from(field, "base64");
    else if (typeof field === "number" && attachments[field] !== undefined) value[name] = attachments[field];
  }
}
