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
