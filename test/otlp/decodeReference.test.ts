/**
 * The protobuf decoder against the reference (protobufjs's generated decode + conversion,
 * protobufReference.ts): the same batch, key order included, for the corpus and for bodies
 * damaged at random (flipped, cut, inserted or repeated bytes), or both reject the body.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeProtobufRequest, OtlpDecodeError } from "../../services/otlp/decode.js";
import { corpusBodies } from "./corpus.js";
import { referenceBatchFromProtobuf } from "./protobufReference.js";

const BODIES = corpusBodies(60, 99);

/** The batch as JSON (bigints as text, `__proto__` keys kept), or the fact that it was rejected. */
function outcome(decode: (body: Buffer) => unknown, body: Buffer): string {
  try {
    return JSON.stringify(decode(body), (_key, value: unknown) => (typeof value === "bigint" ? `${value}n` : value));
  } catch (error) {
    expect(error).toBeInstanceOf(OtlpDecodeError);
    return "rejected";
  }
}

const sameOutcome = (body: Buffer) => expect(outcome(decodeProtobufRequest, body)).toBe(outcome(referenceBatchFromProtobuf, body));

const damage = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat(), byte: fc.constant(0) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("repeat" as const), at: fc.nat(), byte: fc.integer({ min: 1, max: 40 }) }),
);

function damaged(body: Buffer, changes: { kind: "flip" | "cut" | "insert" | "repeat"; at: number; byte: number }[]): Buffer {
  let out = Buffer.from(body);
  for (const { kind, at, byte } of changes) {
    const i = out.length === 0 ? 0 : at % out.length;
    if (kind === "flip") out[i] = byte;
    else if (kind === "cut") out = out.subarray(0, i);
    else if (kind === "insert") out = Buffer.concat([out.subarray(0, i), Buffer.from([byte]), out.subarray(i)]);
    else out = Buffer.concat([out.subarray(0, i + byte), out.subarray(i)]);
  }
  return out;
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 0x80)) bytes.push((n % 0x80) | 0x80);
  bytes.push(n);
  return Buffer.from(bytes);
}
const field = (number: number, wireType: number, payload: Buffer) =>
  Buffer.concat([varint(number * 8 + wireType), wireType === 2 ? varint(payload.length) : Buffer.alloc(0), payload]);
const text = (number: number, value: string) => field(number, 2, Buffer.from(value));
const nested = (number: number, ...parts: Buffer[]) => field(number, 2, Buffer.concat(parts));

/** A request with one span of these attribute `KeyValue`s (and valid ids). */
function spanWith(...keyValues: Buffer[]): Buffer {
  const span = [nested(1, Buffer.alloc(16, 1)), nested(2, Buffer.alloc(8, 2)), ...keyValues.map((kv) => field(9, 2, kv))];
  return nested(1, nested(2, nested(2, ...span)));
}

describe("decodeProtobufRequest against protobufjs", () => {
  it.each([
    ["a oneof set twice, then another member", [text(1, "k"), nested(2, text(1, "a"), field(3, 0, varint(5)), text(1, "b"))]],
    ["a oneof member repeated last", [text(1, "k"), nested(2, field(3, 0, varint(5)), text(1, "a"), field(3, 0, varint(7)))]],
    ["a value before its key, a key twice", [nested(2, text(1, "v")), text(1, "k1"), text(1, "k2")]],
    ["a value set twice", [text(1, "k"), nested(2, text(1, "v1")), nested(2, field(2, 0, varint(1)))]],
    ["a string read as bytes field of varint wire type", [text(1, "k"), field(1, 0, varint(3))]],
    ["unknown fields of every wire type", [text(1, "k"), field(9, 0, varint(300)), field(10, 1, Buffer.alloc(8)), field(11, 5, Buffer.alloc(4)), nested(12, text(1, "x"))]],
  ])("reads %s as protobufjs does", (_name, parts) => {
    sameOutcome(spanWith(Buffer.concat(parts), Buffer.concat([text(1, "k"), nested(2, text(1, "again"))])));
  });

  it("reads many distinct short strings and the same ones again (the string cache's slots reused) as protobufjs does", () => {
    const keyValues = Array.from({ length: 5000 }, (_, i) => Buffer.concat([text(1, `k${i % 3000}.${"x".repeat(i % 7)}`), nested(2, text(1, `v${i % 1500}é`.slice(0, 2 + (i % 5))))]));
    sameOutcome(spanWith(...keyValues));
  });

  it("decodes every corpus body to the same batch", () => {
    for (const body of BODIES) sameOutcome(body);
  });

  it("decodes damaged bodies to the same batch, or rejects them as the reference does", () => {
    const small = BODIES.slice(0, -2);
    fc.assert(
      fc.property(fc.nat(small.length - 1), fc.array(damage, { minLength: 1, maxLength: 4 }), (which, changes) => {
        sameOutcome(damaged(small[which]!, changes));
      }),
      { numRuns: 3000 },
    );
  });
});
