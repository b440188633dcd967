import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arrayLines, parseArrayLines } from "../../services/queue/jsonArrayLines.js";

/** JSON values with line breaks, quotes and non-ASCII text inside their strings. */
const value = fc.jsonValue({ maxDepth: 3, stringUnit: "binary" });
const parsedAlone = (bytes: Buffer) => parseArrayLines(bytes, 0, bytes.length);

describe("JSON arrays written an element per line (services/queue/jsonArrayLines.ts)", () => {
  it("are one JSON array to any reader, and ours reads the same elements a line at a time", () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 8 }), (values) => {
        const bytes = arrayLines(values.map((v) => JSON.stringify(v)));
        const whole = JSON.parse(bytes.toString()) as unknown[];
        expect(whole).toEqual(JSON.parse(JSON.stringify(values)));
        expect(parsedAlone(bytes)).toEqual(whole);
        expect(bytes.toString().split("\n")).toHaveLength(values.length === 0 ? 1 : values.length + 2);
      }),
      { numRuns: 500 },
    );
  });

  it("reads any other array as null (to be parsed whole), never as other elements", () => {
    const written = fc.oneof(
      fc.tuple(fc.array(value, { maxLength: 6 }), fc.constantFrom(0, 1, 2, "\t")).map(([values, indent]) => JSON.stringify(values, null, indent)),
      fc.array(fc.string({ unit: fc.constantFrom("[", "]", "{", "}", ",", "\n", '"', "1", " ", ":", "\\") }), { maxLength: 30 }).map((chars) => chars.join("")),
    );
    fc.assert(
      fc.property(written, (text) => {
        const read = parsedAlone(Buffer.from(text));
        if (read === null) return;
        expect(read).toEqual(JSON.parse(text));
      }),
      { numRuns: 2_000 },
    );
    expect(parsedAlone(Buffer.from(JSON.stringify([1, { a: "x\ny" }])))).toBeNull();
    expect(parsedAlone(Buffer.from('[\n{"a":\n1},\n2\n]'))).toBeNull();
  });

  it("reads only the bytes it is given: a record's JSON among other bytes", () => {
    const json = arrayLines(['"a"', "[1,2]"]);
    const record = Buffer.concat([Buffer.from([1, 0x0a, 0x5b]), json, Buffer.from([0x0a, 0x5d, 0x0a])]);
    expect(parseArrayLines(record, 3, 3 + json.length)).toEqual(["a", [1, 2]]);
  });
});
