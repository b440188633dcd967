import { arrayLines, parseJsonBytes } from "../jsonArrayLines.js";
import { messageFromJson, messageWriter, type Topic } from "../queue.js";

/**
 * The records on a topic. A publish packs its messages into one record per partition: a
 * JSON array of the messages in their order, a message per line (queue/jsonArrayLines.ts;
 * arrays written on one line read as well), cut past RECORD_TEXT_BYTES. Each message's
 * partition is the one KafkaJS's default partitioner gives its key alone, so the messages of
 * one key (one call's parts) stay in one partition and in order, as when each was a record
 * of its own; a record holding one message (from before packing, from another producer, or
 * on the dead-letter topic, where messages go one per record) is read as well.
 *
 * Why packed: KafkaJS encodes, and decodes, every record in JavaScript (varints, headers,
 * offsets as Long, a partitioner call); with a record per call part that was the largest share
 * of the ingest processes' CPU and a large one of the workers' (the profile in
 * docs/operations.md, "Running at scale"). The bytes on the wire hardly change: the batch is
 * compressed either way.
 */

/** A record's JSON text is cut past this many bytes (a message bigger on its own goes alone). */
const RECORD_TEXT_BYTES = 512 * 1024;

const MURMUR2_SEED = 0x9747b28c;
const MURMUR2_M = 0x5bd1e995;

/**
 * Kafka's murmur2 of a key's UTF-8 bytes (the Java client's and KafkaJS's default partitioner's),
 * as a signed 32-bit integer: in 32-bit arithmetic (Math.imul), which gives the low 32 bits
 * that KafkaJS computes with 64-bit Longs, at a fraction of the cost.
 */
export function murmur2(key: string): number {
  const data = Buffer.from(key);
  let h = MURMUR2_SEED ^ data.length;
  const whole = data.length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, MURMUR2_M);
    k ^= k >>> 24;
    h = Math.imul(h, MURMUR2_M) ^ Math.imul(k, MURMUR2_M);
  }
  const tail = data.length & 3;
  if (tail > 0) {
    if (tail === 3) h ^= data[whole + 2]! << 16;
    if (tail >= 2) h ^= data[whole + 1]! << 8;
    h = Math.imul(h ^ data[whole]!, MURMUR2_M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, MURMUR2_M);
  return h ^ (h >>> 15);
}

/** The partition KafkaJS's default partitioner gives a record of this key. */
export const partitionOfKey = (key: string, partitions: number): number => (murmur2(key) & 0x7fffffff) % partitions;

/** A record to send: packed ones name their partition, a lone message its key (the partitioner places it). */
export type PackedRecord = { readonly partition: number; readonly value: Buffer } | { readonly key: string; readonly value: string };

/** Packs messages into records for a topic of `partitions` partitions; not known (0), a record per message. */
export function recordPacker<T>(topic: Topic<T>): (messages: readonly T[], partitions: number) => PackedRecord[] {
  const write = messageWriter(topic);
  return (messages, partitions) => {
    if (partitions === 0) return messages.map((message) => ({ key: topic.key(message), value: write(message) }));
    const texts = new Map<number, string[]>();
    for (const message of messages) {
      const partition = partitionOfKey(topic.key(message), partitions);
      const list = texts.get(partition);
      if (list) list.push(write(message));
      else texts.set(partition, [write(message)]);
    }
    const records: PackedRecord[] = [];
    for (const [partition, list] of texts) {
      let from = 0;
      let bytes = 0;
      list.forEach((text, i) => {
        if (i > from && bytes + text.length > RECORD_TEXT_BYTES) {
          records.push({ partition, value: arrayLines(list.slice(from, i)) });
          from = i;
          bytes = 0;
        }
        bytes += text.length + 1;
      });
      records.push({ partition, value: arrayLines(list.slice(from)) });
    }
    return records;
  };
}

/** What one record holds. */
export interface RecordContents<T> {
  /** Its messages of the topic's shape, in order. */
  readonly messages: T[];
  /** The JSON texts of what is not of that shape (the whole record's when it is not JSON): for the dead-letter topic. */
  readonly malformed: string[];
}

/** Reads a record's value: a JSON array of messages (packed) or one message. */
export function recordReader<T>(topic: Topic<T>): (bytes: Buffer) => RecordContents<T> {
  const fromJson = messageFromJson(topic);
  return (bytes) => {
    const parsed = parseJsonBytes(bytes, 0, bytes.length);
    if ("notJson" in parsed) return { messages: [], malformed: [parsed.notJson] };
    const { value } = parsed;
    const text = () => bytes.toString("utf8");
    if (!Array.isArray(value)) {
      const message = fromJson(value);
      return message === null ? { messages: [], malformed: [text()] } : { messages: [message], malformed: [] };
    }
    const messages: T[] = [];
    const malformed: string[] = [];
    // Reading restores bytes fields in place: a refused element is written out as it came.
    let asSent: unknown[] | null = null;
    value.forEach((element, i) => {
      const message = fromJson(element);
      if (message !== null) messages.push(message);
      else malformed.push(JSON.stringify((asSent ??= JSON.parse(text()) as unknown[])[i]));
    });
    return { messages, malformed };
  };
}
