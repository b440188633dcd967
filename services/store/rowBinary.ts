/**
 * Rows in ClickHouse's RowBinary format, the worker's insert format. Every string is its
 * UTF-8 length (LEB128) followed by its bytes, so no value is ever escaped or parsed for
 * separators: whatever a value holds, it reads back exactly and cannot spill into the
 * next field. Integers are little-endian; Nullable values carry a 1 (null) or 0 byte first.
 */
type Utf8Writer = (this: Buffer, value: string, offset: number) => number;
/** Buffer's own UTF-8 writer, without `write`'s argument checks (a hot path); `write` where absent. */
const utf8Write: Utf8Writer =
  (Buffer.prototype as unknown as { utf8Write?: Utf8Writer }).utf8Write ??
  function (this: Buffer, value: string, offset: number) {
    return this.write(value, offset, "utf8");
  };

/** Bytes of the LEB128 length written ahead of a value of up to `maxBytes` bytes. */
const lengthBytes = (maxBytes: number): number => (maxBytes < 0x80 ? 1 : maxBytes < 0x4000 ? 2 : maxBytes < 0x20_0000 ? 3 : maxBytes < 0x1000_0000 ? 4 : 5);

export class RowBinaryWriter {
  private buffer: Buffer;
  private position = 0;

  /** `initial`: a guess of the total bytes, so that the buffer rarely grows, or a buffer to write into (RowBuffer). */
  constructor(initial: number | Buffer = 64 * 1024) {
    this.buffer = typeof initial === "number" ? Buffer.allocUnsafe(initial) : initial;
  }

  string(value: string): this {
    // An ASCII value shorter than 128 units is its own length in bytes, written in one
    // LEB128 byte: copied unit by unit, which costs less than the native call.
    if (value.length < 0x80) {
      this.reserve(1 + value.length);
      const written = this.shortAscii(value, this.position + 1);
      if (written !== null) {
        this.buffer[this.position] = written;
        this.position += 1 + written;
        return this;
      }
    }
    // Otherwise the length goes first but is known only once the value is written: room is
    // kept for the longest the value could be (3 bytes per UTF-16 unit) and the length is
    // written in that many LEB128 bytes, padded with continuation bytes when shorter (the
    // format reads any LEB128, padded or not).
    const maxBytes = value.length * 3;
    const width = lengthBytes(maxBytes);
    this.reserve(width + maxBytes);
    const start = this.position + width;
    const written = utf8Write.call(this.buffer, value, start);
    this.paddedVarUInt(written, width);
    this.position = start + written;
    return this;
  }

  nullableString(value: string | null): this {
    return value === null ? this.byte(1) : this.byte(0).string(value);
  }

  strings(values: readonly string[]): this {
    this.reserve(10);
    this.varUInt(values.length);
    for (const value of values) this.string(value);
    return this;
  }

  /** An Array(String) of values already in UTF-8. */
  utf8Strings(values: readonly Uint8Array[]): this {
    this.reserve(10);
    this.varUInt(values.length);
    for (const value of values) this.blob(value);
    return this;
  }

  /** Int64 or UInt64 (non-negative) from a safe integer. */
  int64(value: number): this {
    if (!Number.isSafeInteger(value)) throw new RangeError(`expected a safe integer, got ${String(value)}`);
    this.reserve(8);
    const high = Math.floor(value / 0x1_0000_0000);
    this.buffer.writeUInt32LE(value - high * 0x1_0000_0000, this.position);
    this.buffer.writeInt32LE(high, this.position + 4);
    this.position += 8;
    return this;
  }

  /** UInt64 from a bigint in [0, 2^64). */
  uint64(value: bigint): this {
    this.reserve(8);
    this.buffer.writeBigUInt64LE(value, this.position);
    this.position += 8;
    return this;
  }

  nullableInt64(value: number | null): this {
    return value === null ? this.byte(1) : this.byte(0).int64(value);
  }

  /** UInt8. */
  uint8(value: number): this {
    if (!Number.isInteger(value) || value < 0 || value > 0xff) throw new RangeError(`expected a UInt8, got ${String(value)}`);
    return this.byte(value);
  }

  /** A String column holding arbitrary bytes (file content), copied as they are. */
  blob(value: Uint8Array): this {
    const length = value.length;
    this.reserve(5 + length);
    this.varUInt(length);
    const buffer = this.buffer;
    const at = this.position;
    // Short values byte by byte: cheaper than the native copy's call.
    if (length < 64) for (let i = 0; i < length; i++) buffer[at + i] = value[i]!;
    else buffer.set(value, at);
    this.position = at + length;
    return this;
  }

  /** Bytes already in RowBinary (a whole column value encoded before), copied as they are. */
  raw(bytes: Uint8Array): this {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.position);
    this.position += bytes.length;
    return this;
  }

  /** Bytes written so far. */
  get length(): number {
    return this.position;
  }

  /** The rows written so far (a view: valid until the next write). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.position);
  }

  /** The whole buffer written into (grown or not), for a RowBuffer to lend again. */
  storage(): Buffer {
    return this.buffer;
  }

  /** Copies a short ASCII string byte by byte (cheaper than a native call); null if not ASCII. */
  private shortAscii(value: string, at: number): number | null {
    const buffer = this.buffer;
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      if (code >= 0x80) return null;
      buffer[at + i] = code;
    }
    return value.length;
  }

  private byte(value: number): this {
    this.reserve(1);
    this.buffer[this.position++] = value;
    return this;
  }

  private paddedVarUInt(value: number, width: number): void {
    let rest = value;
    for (let i = 0; i < width - 1; i++) {
      this.buffer[this.position + i] = (rest & 0x7f) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.buffer[this.position + width - 1] = rest;
  }

  private varUInt(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.buffer[this.position++] = (rest & 0x7f) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.buffer[this.position++] = rest;
  }

  private reserve(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.position + bytes));
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }
}

/**
 * One buffer for the inserts of one table, lent to one RowBinaryWriter at a time and given
 * back once its rows were sent. Each insert of a batch of OTLP spans takes megabytes: new
 * buffers each time are garbage that V8 frees only after about 64 MB more has built up
 * outside a thread's heap, so every writer thread would carry that much. A writer asked for
 * while the buffer is lent (two batches at once on one thread) gets a buffer of its own.
 */
export class RowBuffer {
  private spare: Buffer | null = null;

  /** `maxKeptBytes`: a buffer grown larger (a rare huge insert) is not kept. */
  constructor(private readonly maxKeptBytes = 32 * 1024 * 1024) {}

  /** A writer over the spare buffer when it is free and holds `bytes`, else over a new one. */
  writer(bytes: number): RowBinaryWriter {
    const spare = this.spare;
    if (spare === null || spare.length < bytes) return new RowBinaryWriter(bytes);
    this.spare = null;
    return new RowBinaryWriter(spare);
  }

  /** Takes the writer's buffer back, once what it wrote was sent (after a failed send, it is dropped: a socket may still read it). */
  giveBack(writer: RowBinaryWriter): void {
    const buffer = writer.storage();
    if (buffer.length > this.maxKeptBytes) return;
    if (this.spare === null || this.spare.length < buffer.length) this.spare = buffer;
  }
}

/** Bytes per chunk that `rowsInOrder` copies rows into. */
const ORDERED_CHUNK_BYTES = 256 * 1024;

/**
 * The rows at `places` of `bytes` (rows made in another order), in the order of `places`, as
 * chunks of about ORDERED_CHUNK_BYTES: copied a chunk at a time as the insert's body is sent,
 * so that a second copy of all the rows (megabytes per insert of OTLP spans) is never held. A
 * row longer than a chunk goes as a view of `bytes`, which must stay as it is until the
 * chunks are all sent.
 */
export function* rowsInOrder(bytes: Buffer, places: Iterable<{ readonly start: number; readonly end: number }>): Generator<Buffer> {
  let chunk = Buffer.allocUnsafe(ORDERED_CHUNK_BYTES);
  let filled = 0;
  for (const { start, end } of places) {
    const length = end - start;
    if (filled + length > chunk.length && filled > 0) {
      yield chunk.subarray(0, filled);
      chunk = Buffer.allocUnsafe(ORDERED_CHUNK_BYTES);
      filled = 0;
    }
    if (length > chunk.length) yield bytes.subarray(start, end);
    else filled += bytes.copy(chunk, filled, start, end);
  }
  if (filled > 0) yield chunk.subarray(0, filled);
}

/**
 * The values of a one-String-column RowBinary result (e.g. `SELECT data ... FORMAT RowBinary`),
 * each as the exact bytes stored, yielded as soon as it is whole: memory holds one value and
 * the piece being read, whatever the number of rows. A value longer than `maxValueBytes` (a
 * stream that is not what the caller asked for) or a stream that ends inside a value throws.
 */
export async function* readStringColumn(source: AsyncIterable<Uint8Array>, maxValueBytes: number): AsyncGenerator<Buffer> {
  let value: Buffer | null = null;
  let filled = 0;
  let length = 0;
  let shift = 0;
  for await (const raw of source) {
    const piece = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    let at = 0;
    while (at < piece.length) {
      if (value === null) {
        const byte = piece[at++]!;
        length += (byte & 0x7f) * 2 ** shift;
        shift += 7;
        if (byte & 0x80) continue;
        if (length > maxValueBytes) throw new RangeError(`a RowBinary value of ${length} bytes exceeds the ${maxValueBytes} expected`);
        value = Buffer.allocUnsafe(length);
        filled = 0;
        length = 0;
        shift = 0;
      } else {
        const n = Math.min(value.length - filled, piece.length - at);
        piece.copy(value, filled, at, at + n);
        filled += n;
        at += n;
      }
      if (value !== null && filled === value.length) {
        yield value;
        value = null;
      }
    }
  }
  if (value !== null || shift > 0) throw new RangeError("the RowBinary stream ended inside a value");
}
