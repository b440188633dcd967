/**
 * The protobuf decoder against the reference (protobufjs's generated decode + conversion,
 * protobufReference.ts): the same batch, key order included, for the corpus and for bodies
 * damaged at random (flipped, cut, inserted or repeated bytes), or both reject the body.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeProtobufRequest, OtlpDecodeError } from "../../services/ingest/otlp/decode.js";
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

describe("decodeProtobufRequest against protobufjs", () => {
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
