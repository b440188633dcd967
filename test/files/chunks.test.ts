import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Chunker } from "../../services/store/files/fileRows.js";
import { readStringColumn, RowBinaryWriter } from "../../services/store/rowBinary.js";

/** `bytes` cut at the given offsets. */
function split(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const bounds = [0, ...[...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b), bytes.length];
  return bounds.slice(1).map((end, i) => bytes.subarray(bounds[i], end));
}

async function* from(pieces: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* pieces;
}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const value of source) out.push(Buffer.from(value));
  return out;
}

describe("readStringColumn", () => {
  it("reads back every value a RowBinaryWriter wrote as blobs, however the stream is cut", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 8 }), fc.array(fc.nat(4000), { maxLength: 10 }), async (values, cuts) => {
        const out = new RowBinaryWriter(8);
        for (const value of values) out.blob(value);
        const back = await collect(readStringColumn(from(split(out.bytes(), cuts)), 1000));
        expect(back).toEqual(values.map((v) => Buffer.from(v)));
      }),
    );
  });

  it("reads a value whose length prefix takes three bytes, split inside the prefix", async () => {
    const value = Buffer.alloc(20_000, 7);
    const bytes = new RowBinaryWriter().blob(value).bytes();
    expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xa0, 0x9c, 0x01]));
    expect(await collect(readStringColumn(from([bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)]), 1 << 20))).toEqual([value]);
  });

  it("refuses a stream that ends inside a value, and a value longer than allowed", async () => {
    const bytes = new RowBinaryWriter().blob(Buffer.from("abcdef")).bytes();
    await expect(collect(readStringColumn(from([bytes.subarray(0, 4)]), 100))).rejects.toThrow("the RowBinary stream ended inside a value");
    await expect(collect(readStringColumn(from([bytes.subarray(0, 1)]), 3))).rejects.toThrow("a RowBinary value of 6 bytes exceeds the 3 expected");
  });
});

describe("Chunker", () => {
  it("cuts pieces of any size into chunks of exactly the chunk size, the last one shorter, losing nothing", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.array(fc.nat(200), { maxLength: 12 }), fc.integer({ min: 1, max: 40 }), (content, cuts, size) => {
        const chunker = new Chunker(size);
        const chunks = split(content, cuts).flatMap((piece) => chunker.push(piece));
        const last = chunker.end();
        if (last) chunks.push(last);
        expect(Buffer.concat(chunks)).toEqual(Buffer.from(content));
        expect(chunks.slice(0, -1).every((c) => c.length === size)).toBe(true);
        expect(chunks.length).toBe(Math.ceil(content.length / size));
      }),
    );
  });
});
