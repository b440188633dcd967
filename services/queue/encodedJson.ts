import { flattenPart, type JsonPart } from "../jsonLeaves.js";
import type { JsonValue } from "../json.js";
import type { RowBinaryWriter } from "../rowBinaryWriter.js";

/**
 * A JSON field of a call event as the durable log hands it to the worker: its JSON text and,
 * for the parts the `calls` row flattens, its leaves, both already encoded the way a
 * RowBinary row holds them (a string: LEB128 length + UTF-8; leaves: one such string after
 * another). The request's thread encodes them once (traceRecordCodec.ts); the worker copies
 * the bytes into its inserts and parses the text only when something asks for the value.
 * Places are offsets into the record, which it keeps.
 */
export class EncodedJson {
  private parsed: JsonValue | undefined;

  constructor(
    readonly record: Buffer,
    /** The value's JSON text (JSON.stringify's) as a RowBinary string: its length, then UTF-8. */
    readonly stringStart: number,
    readonly textStart: number,
    readonly textEnd: number,
    /** The text's length in UTF-16 code units (the JavaScript string's length). */
    readonly chars: number,
    /** Whether the value is a JSON object (the event checks ask). */
    readonly isObject: boolean,
    /** The leaves under the part's name (jsonLeaves.ts), or null for a field that is not flattened. */
    readonly leaves: EncodedLeaves | null,
  ) {}

  value(): JsonValue {
    if (this.parsed === undefined) this.parsed = JSON.parse(this.record.toString("utf8", this.textStart, this.textEnd)) as JsonValue;
    return this.parsed;
  }

  /** JSON.stringify of an event holding it writes the value (parked parts, dead letters). */
  toJSON(): JsonValue {
    return this.value();
  }
}

/**
 * `flattenPart`'s four arrays, each as its strings in RowBinary form one after another, at
 * [pathsStart, valuesStart), [valuesStart, longPathsStart), [longPathsStart, longHashesStart),
 * [longHashesStart, end) of the record.
 */
export interface EncodedLeaves {
  readonly count: number;
  readonly longCount: number;
  readonly pathsStart: number;
  readonly valuesStart: number;
  readonly longPathsStart: number;
  readonly longHashesStart: number;
  readonly end: number;
}

/** A JSON-valued field of an event: the parsed value (as made by ingest), or as read from the log. */
export type JsonField<T extends JsonValue> = T | EncodedJson;

/** The value of a field, parsing an encoded one. */
export const jsonFieldValue = <T extends JsonValue>(field: JsonField<T>): T => (field instanceof EncodedJson ? (field.value() as T) : field);

/** Whether a field holds a JSON object (encoded or not). */
export const isJsonObjectField = (field: unknown): boolean =>
  field instanceof EncodedJson ? field.isObject : typeof field === "object" && field !== null && !Array.isArray(field);

/**
 * Writes `flattenPart(value, part)` as `readLeaves` reads it back: the counts, the four
 * regions' byte lengths (UInt32, filled in once written), the regions.
 */
export function writeLeaves(out: RowBinaryWriter, value: unknown, part: JsonPart): void {
  const flat = flattenPart(value, part);
  out.arrayLength(flat.json_paths.length).arrayLength(flat.json_long_paths.length);
  const lengths = out.position;
  out.uint32(0).uint32(0).uint32(0).uint32(0);
  const arrays = [flat.json_paths, flat.json_values, flat.json_long_paths, flat.json_long_hashes];
  for (let i = 0; i < arrays.length; i++) {
    const start = out.position;
    for (const text of arrays[i]!) out.string(text);
    out.patchUInt32(lengths + 4 * i, out.position - start);
  }
}

/** Reads the places of RowBinary-form values in a buffer (the log record of traceRecordCodec.ts). */
export class BinaryReader {
  position = 0;

  constructor(readonly buffer: Buffer) {}

  byte(): number {
    if (this.position >= this.buffer.length) throw new RangeError("record ends early");
    return this.buffer[this.position++]!;
  }

  varUInt(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
  }

  uint32(): number {
    const value = this.buffer.readUInt32LE(this.position);
    this.position += 4;
    return value;
  }

  /** Skips `bytes`, returning where they end. */
  skip(bytes: number): number {
    if (this.position + bytes > this.buffer.length) throw new RangeError("record ends early");
    this.position += bytes;
    return this.position;
  }

  /** A string's text: its length is read, the text's place returned and skipped. */
  text(): { readonly start: number; readonly end: number } {
    const length = this.varUInt();
    const start = this.position;
    return { start, end: this.skip(length) };
  }

  leaves(): EncodedLeaves {
    const count = this.varUInt();
    const longCount = this.varUInt();
    const paths = this.uint32();
    const values = this.uint32();
    const longPaths = this.uint32();
    const longHashes = this.uint32();
    const pathsStart = this.position;
    const valuesStart = this.skip(paths);
    const longPathsStart = this.skip(values);
    const longHashesStart = this.skip(longPaths);
    return { count, longCount, pathsStart, valuesStart, longPathsStart, longHashesStart, end: this.skip(longHashes) };
  }
}
