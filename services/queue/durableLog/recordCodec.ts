import type { DecodedPayload, RecordCodec, Topic } from "../topic.js";

/**
 * The payload of one log record: one request's messages. Encoded in the request's thread,
 * decoded by the consumer (read back from the log, or handed over). A topic may bring its
 * own codec (Topic.records); the default is the messages' JSON array.
 */

export function encodeRecord(messages: readonly unknown[]): Buffer {
  return Buffer.from(JSON.stringify(messages));
}

export function decodeRecord<T>(payload: Buffer, accepts: (value: unknown) => value is T): DecodedPayload<T> {
  const text = payload.toString("utf8");
  let values: unknown;
  try {
    values = JSON.parse(text);
  } catch {
    return { messages: [], malformed: [text] };
  }
  const list: unknown[] = Array.isArray(values) ? values : [values];
  const messages = list.filter(accepts);
  if (messages.length === list.length) return { messages };
  return { messages, malformed: list.filter((m) => !accepts(m)) };
}

/** The codec the log uses for a topic's records. */
export function recordCodecOf<T>(topic: Topic<T>): RecordCodec<T> {
  if (topic.records) return topic.records;
  const accepts = topic.accepts ?? ((value: unknown): value is T => topic.schema.safeParse(value).success);
  return { encode: encodeRecord, decode: (payload) => decodeRecord(payload, accepts) };
}
