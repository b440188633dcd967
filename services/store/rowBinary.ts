/**
 * Rows in ClickHouse's RowBinary format, the worker's insert format. Every string is its
 * UTF-8 length (LEB128) followed by its bytes, so no value is ever escaped or parsed for
 * separators: whatever a value holds, it reads back exactly and cannot spill into the
 * next field. Integers are little-endian; Nullable values carry a 1 (null) or 0 byte first.
 */
export class RowBinaryWriter {
  private buffer: Buffer;
  private position = 0;

  constructor(initialBytes = 64 * 1024) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  string(value: string): this {
    // Up to 42 UTF-16 units fit 127 UTF-8 bytes: one length byte, known before writing.
    if (value.length <= 42) {
      this.reserve(1 + value.length * 3);
      const written = this.shortAscii(value, this.position + 1) ?? this.buffer.write(value, this.position + 1, "utf8");
      this.buffer[this.position] = written;
      this.position += 1 + written;
      return this;
    }
    const bytes = Buffer.byteLength(value, "utf8");
    this.reserve(10 + bytes);
    this.varUInt(bytes);
    this.position += this.buffer.write(value, this.position, "utf8");
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

  nullableInt64(value: number | null): this {
    return value === null ? this.byte(1) : this.byte(0).int64(value);
  }

  /** The rows written so far (a view: valid until the next write). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.position);
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
