import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bytesDigest, compareCodePoints, createFileDigester, fileDigest, objectDigest, pythonFloat, pythonJsonDumps, rowDigest, tableDigest } from "../../services/digests.js";
import { fromPlainJson, JsonFloat, JsonInteger, MAX_DEPTH, parseLossless, type LosslessValue } from "../../services/losslessJson.js";
import { DigestInputError } from "../../services/errors.js";

interface DigestVectors {
  object_cases: { input_json: string; canonical: string; digest: string }[];
  table_case: { rows_json: string[]; row_digests: string[]; table_digest: string };
  file_case: { content_utf8: string; digest: string };
}

/** A copy of the spec's digest-vectors.json. */
const vectors = JSON.parse(readFileSync(new URL("./digest-vectors.json", import.meta.url), "utf8")) as DigestVectors;

const dumps = (json: string): string => pythonJsonDumps(parseLossless(json));

describe("the spec's digest vectors", () => {
  it.each(vectors.object_cases)("object $input_json", ({ input_json, canonical, digest }) => {
    const value = parseLossless(input_json);
    expect(pythonJsonDumps(value)).toBe(canonical);
    expect(objectDigest(value)).toBe(digest);
  });

  it("table: row digests and the table digest", () => {
    const rowDigests = vectors.table_case.rows_json.map((json) => rowDigest(parseLossless(json)));
    expect(rowDigests).toEqual(vectors.table_case.row_digests);
    expect(tableDigest(rowDigests)).toBe(vectors.table_case.table_digest);
  });

  it("file", () => {
    expect(fileDigest(Buffer.from(vectors.file_case.content_utf8, "utf8"))).toBe(vectors.file_case.digest);
  });
});

describe("bytesDigest", () => {
  it("is SHA-256 in URL-safe base64 with - and _ replaced by X and Y, unpadded", () => {
    for (let n = 0; n < 64; n++) {
      const bytes = Buffer.from(`sample ${n}`);
      const base64 = createHash("sha256").update(bytes).digest("base64");
      const expected = base64.replace(/\+/g, "X").replace(/\//g, "Y").replace(/=+$/, "");
      expect(bytesDigest(bytes)).toBe(expected);
      expect(bytesDigest(bytes)).toMatch(/^[A-Za-z0-9XY]{43}$/);
    }
  });

  it("the table digest of no rows is the SHA-256 of nothing", () => {
    expect(tableDigest([])).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });
});

describe("createFileDigester", () => {
  it("equals fileDigest of the whole content, however the content is split", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), fc.array(fc.nat(4096), { maxLength: 12 }), (content, cuts) => {
        const bounds = [0, ...[...new Set(cuts.map((c) => c % (content.length + 1)))].sort((a, b) => a - b), content.length];
        const digester = createFileDigester();
        for (let i = 1; i < bounds.length; i++) digester.update(content.subarray(bounds[i - 1], bounds[i]));
        expect(digester.digest()).toBe(fileDigest(content));
      }),
    );
  });

  it("gives the spec's file vector and the digest of empty content", () => {
    const digester = createFileDigester();
    for (const ch of vectors.file_case.content_utf8) digester.update(Buffer.from(ch, "utf8"));
    expect(digester.digest()).toBe(vectors.file_case.digest);
    expect(createFileDigester().digest()).toBe(fileDigest(new Uint8Array(0)));
  });
});

describe("pythonJsonDumps: floats as Python's repr", () => {
  it.each([
    ["0.1", "0.1"],
    ["1e16", "1e+16"],
    ["1e15", "1000000000000000.0"],
    ["1e-5", "1e-05"],
    ["0.0001", "0.0001"],
    ["0.00001", "1e-05"],
    ["123456789012345680000.0", "1.2345678901234568e+20"],
    ["5e-324", "5e-324"],
    ["1.7976931348623157e308", "1.7976931348623157e+308"],
    ["-0.0", "-0.0"],
    ["0.0", "0.0"],
    ["100.0", "100.0"],
    ["1e22", "1e+22"],
    ["1.5e300", "1.5e+300"],
    ["-1.5e-7", "-1.5e-07"],
    ["9999999999999998.0", "9999999999999998.0"],
    ["1234567.125", "1234567.125"],
    ["0.000123", "0.000123"],
    ["1e400", "Infinity"],
    ["-1e400", "-Infinity"],
  ])("%s is written %s", (json, python) => {
    expect(dumps(json)).toBe(python);
  });

  it("NaN as Python's json writes it", () => {
    expect(pythonFloat(NaN)).toBe("NaN");
  });
});

describe("pythonJsonDumps: integers, strings, keys", () => {
  it("writes integers exactly, however big", () => {
    expect(dumps("12345678901234567890123")).toBe("12345678901234567890123");
    expect(dumps('{"n": -98765432109876543210987654321, "m": 1.0, "k": 1}')).toBe('{"k": 1, "m": 1.0, "n": -98765432109876543210987654321}');
    expect(pythonJsonDumps(new JsonInteger(-(10n ** 40n)))).toBe(`-1${"0".repeat(40)}`);
  });

  it("escapes as Python does with ensure_ascii", () => {
    expect(pythonJsonDumps("é😀\u2028")).toBe(String.raw`"\u00e9\ud83d\ude00\u2028"`);
    expect(pythonJsonDumps('"\\/\n\r\t\b\f')).toBe(String.raw`"\"\\/\n\r\t\b\f"`);
    expect(pythonJsonDumps("\u0000\u0001\u001f\u007f ~")).toBe(String.raw`"\u0000\u0001\u001f\u007f ~"`);
    expect(pythonJsonDumps("\ud800 \udfff \uffff")).toBe(String.raw`"\ud800 \udfff \uffff"`);
    expect(pythonJsonDumps("\u00ff\u0100\uABCD")).toBe(String.raw`"\u00ff\u0100\uabcd"`);
  });

  it("writes containers with Python's separators", () => {
    expect(dumps('{"a": [], "b": {}, "c": [1, [2, {"d": null}]], "e": true, "f": false}')).toBe(
      '{"a": [], "b": {}, "c": [1, [2, {"d": null}]], "e": true, "f": false}',
    );
  });

  it("sorts keys by code point, not by UTF-16 unit", () => {
    const keys = ["\uffff", "😀", "\ue000", "a", "\ud7ff", "", "B", "é", "\ud800", "\udc00x", "aa"];
    const obj = new Map<string, LosslessValue>(keys.map((k) => [k, null]));
    const sorted = [...keys].sort((x, y) => {
      const [cx, cy] = [[...x].map((c) => c.codePointAt(0) ?? 0), [...y].map((c) => c.codePointAt(0) ?? 0)];
      for (let i = 0; i < Math.min(cx.length, cy.length); i++) if (cx[i] !== cy[i]) return (cx[i] ?? 0) - (cy[i] ?? 0);
      return cx.length - cy.length;
    });
    expect(sorted.slice(-3)).toEqual(["\ue000", "\uffff", "😀"]);
    expect(pythonJsonDumps(obj)).toBe(`{${sorted.map((k) => `${pythonJsonDumps(k)}: null`).join(", ")}}`);
  });

  it("compares a pair with a lone high surrogate followed by another unit", () => {
    expect(compareCodePoints("\ud800\udc05", "\ud800A")).toBeGreaterThan(0);
    expect(compareCodePoints("\ud800\udc00", "\ud800\ue000")).toBeGreaterThan(0);
    expect(compareCodePoints("\ud800A", "\ud800B")).toBeLessThan(0);
    expect(compareCodePoints("ab", "a")).toBeGreaterThan(0);
    expect(compareCodePoints("x", "x")).toBe(0);
  });

  it("refuses nesting deeper than the parser allows", () => {
    let deep: LosslessValue = [];
    for (let i = 0; i < MAX_DEPTH; i++) deep = [deep];
    expect(() => pythonJsonDumps(deep)).toThrow(DigestInputError);
  });
});

describe("rowDigest", () => {
  it("takes only objects", () => {
    for (const notAnObject of ["[1]", "1", "null", '"x"', "1.5", "true"]) {
      expect(() => rowDigest(parseLossless(notAnObject))).toThrow(DigestInputError);
    }
    expect(() => rowDigest(parseLossless("[]"))).toThrow("a table row must be a JSON object, not an array");
  });

  it("is the object digest of the row", () => {
    const row = parseLossless('{"x": 1.0}');
    expect(rowDigest(row)).toBe(objectDigest(row));
  });
});

describe("pythonJsonDumps: properties", () => {
  const sortKeysDeep = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeysDeep);
    if (v === null || typeof v !== "object") return v;
    const entries = Object.entries(v).sort(([a], [b]) => compareCodePoints(a, b));
    return Object.fromEntries(entries.map(([k, item]) => [k, sortKeysDeep(item)]));
  };

  it("the text of fromPlainJson(v) reads back with JSON.parse to v", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const plain: unknown = JSON.parse(JSON.stringify(v));
        const text = pythonJsonDumps(fromPlainJson(plain));
        expect(text).toMatch(/^[\x20-\x7e]*$/);
        expect(JSON.parse(text)).toEqual(sortKeysDeep(plain));
      }),
      { numRuns: 300 },
    );
  });

  it("a float is written with a decimal point or an exponent and reads back to itself", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        const text = pythonJsonDumps(new JsonFloat(x));
        expect(text).toMatch(/^-?\d+(\.\d+)?(e[+-]\d{2,3})?$/);
        expect(text).toMatch(/[.e]/);
        expect(Object.is(Number(text), x)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
