/**
 * The payload of one log record: one request's messages. Encoded in the request's thread,
 * decoded by the consumer (read back from the log, or handed over).
 */

/** A record's messages, and the values in it that are not messages of the topic (set aside). */
export interface DecodedPayload<T> {
  readonly messages: T[];
  readonly malformed?: readonly unknown[];
}

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
