import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonParseError } from "../../services/errors.js";
import { checkJsonBytes } from "../../services/jsonBounds.js";

const bytes = (text: string) => Buffer.from(text, "utf8");
const refusal = (input: Uint8Array, depth = 256): string | null => {
  try {
    checkJsonBytes(input, depth);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(JsonParseError);
    return (err as Error).message;
  }
};

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** How deep a JSON value nests its containers. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === "object" && value !== null) return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe("checkJsonBytes", () => {
  it("accepts any JSON text nested at most the limit, and refuses one level more", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        const text = JSON.stringify(value);
        const depth = depthOf(value);
        expect(refusal(bytes(text), Math.max(depth, 1))).toBeNull();
        if (depth > 1) expect(refusal(bytes(text), depth - 1)).toMatch(/nested deeper than/);
      }),
      { numRuns: 300 },
    );
  });

  it("does not count brackets, quotes or escapes inside strings", () => {
    const text = JSON.stringify({ a: "[[[[{{{{\\\"]]", b: ['\\"[[[', "\u{1F600}"] });
    expect(refusal(bytes(text), 2)).toBeNull();
    expect(refusal(bytes(`${"[".repeat(300)}${"]".repeat(300)}`))).toBe("Invalid JSON at position 256: containers nested deeper than 256 levels");
  });

  it("refuses invalid UTF-8 naming the byte, and accepts every valid string", () => {
    expect(refusal(Buffer.concat([bytes('{"a": "x'), Buffer.from([0xc0, 0x80]), bytes('"}')]))).toBe("Invalid JSON at position 8: the body is not valid UTF-8 (byte 8)");
    for (const bad of [[0x80], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xff]]) {
      expect(refusal(Buffer.concat([bytes('"'), Buffer.from(bad), bytes('"')]))).toMatch(/not valid UTF-8 \(byte 1\)/);
    }
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (s) => refusal(bytes(JSON.stringify(s))) === null));
  });

  it("refuses \\u escapes of lone surrogates and accepts escaped pairs", () => {
    expect(refusal(bytes('"\\ud83d\\ude00"'))).toBeNull();
    expect(refusal(bytes('"\\uD83D\\uDE00 and \\u0041"'))).toBeNull();
    expect(refusal(bytes('"\\ud83d"'))).toMatch(/lone high surrogate/);
    expect(refusal(bytes('"\\ud83dx"'))).toMatch(/lone high surrogate/);
    expect(refusal(bytes('"\\ud83d\\u0041"'))).toMatch(/lone high surrogate/);
    expect(refusal(bytes('"\\ude00"'))).toMatch(/lone low surrogate/);
    expect(refusal(bytes('"\\\\ud83d"'))).toBeNull(); // an escaped backslash, then text
  });

  it("refuses a string of any text only for its lone surrogates, wherever its escapes, quotes and brackets fall", () => {
    // A run of letters makes strings both shorter and longer than the bytes looked at one by one (jsonBounds.ts).
    const unit = fc.constantFrom("a", "a".repeat(20), "\\", '"', "[", "{", "]", "\u{1F600}", "\ud83d", "\ude00", "\n", "é");
    const text = fc.string({ unit, maxLength: 24 });
    fc.assert(
      fc.property(text, text, (s, t) => {
        const body = bytes(JSON.stringify([s, { [t]: [s, t] }, "[["]));
        const refused = refusal(body, 3);
        expect(refused === null).toBe(!LONE_SURROGATE.test(s) && !LONE_SURROGATE.test(t));
        if (refused !== null) expect(refused).toMatch(/lone (high|low) surrogate/);
      }),
      { numRuns: 500 },
    );
  });
});
