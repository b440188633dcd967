import { describe, expect, it } from "vitest";
import { rowDigest } from "../../services/digests.js";
import { ValidationError } from "../../services/errors.js";
import { parseLossless } from "../../services/losslessJson.js";
import { MAX_JSON_DEPTH, MAX_LEAF_CHARS, MAX_LEAVES } from "../../services/store/calls/flatten.js";
import { compactJson, flattenRow, parseRow, rowKey, storedRow } from "../../services/store/tables/tableRows.js";

describe("stored table rows", () => {
  it("write compact JSON that reads back as the value sent: key order, exact integers, floats as floats", () => {
    const text = '{"z": 1, "a": [1.0, 1e-5, 1e16, -0.0, 2.50, 12345678901234567890123], "s": "é\\n\\"\\u0001😀", "n": null, "t": true, "o": {}}';
    const compact = compactJson(parseLossless(text));
    expect(compact).toBe('{"z":1,"a":[1.0,1e-05,1e+16,-0.0,2.5,12345678901234567890123],"s":"é\\n\\"\\u0001😀","n":null,"t":true,"o":{}}');
    expect(rowDigest(parseLossless(compact))).toBe(rowDigest(parseLossless(text)));
  });

  it("flatten into leaves under val as calls flatten their JSON", () => {
    const row = parseLossless('{"q": "x", "n": 1.0, "big": 12345678901234567890123, "list": [true, null, [], {}], "nested": {"a": {"b": 2.5}}}');
    expect(flattenRow(row)).toEqual({
      paths: ["val.q", "val.n", "val.big", "val.list.0", "val.list.1", "val.list.2", "val.list.3", "val.nested.a.b"],
      values: ["x", "1", "12345678901234567890123", "true", "null", "[]", "{}", "2.5"],
    });
  });

  it("bound the leaves: at most MAX_LEAVES, each cut to MAX_LEAF_CHARS, subtrees below MAX_JSON_DEPTH as their JSON text", () => {
    const many = parseLossless(JSON.stringify(Object.fromEntries(Array.from({ length: MAX_LEAVES + 5 }, (_, i) => [`k${i}`, i]))));
    expect(flattenRow(many).paths.length).toBe(MAX_LEAVES);
    expect(flattenRow(parseLossless(JSON.stringify({ long: "x".repeat(MAX_LEAF_CHARS + 10) }))).values[0]!.length).toBe(MAX_LEAF_CHARS);
    let deep: unknown = { end: 1.5 };
    for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = { d: deep };
    const leaves = flattenRow(parseLossless(JSON.stringify(deep)));
    expect(leaves.paths).toEqual([`val${".d".repeat(MAX_JSON_DEPTH)}`]);
    expect(leaves.values).toEqual(['{"end":1.5}']);
  });

  it("refuse rows that are not objects and numbers that overflow a double", () => {
    expect(() => parseRow("[1]", ["body", "rows", 0])).toThrow(ValidationError);
    expect(() => parseRow('{"a": [1e999]}', ["body", "rows", 0])).toThrow("too large for a double");
    const row = parseRow('{"a": 1}', []);
    expect(storedRow(row, "d")).toEqual({ digest: "d", key: rowKey("d"), val: '{"a":1}', sizeBytes: 7, leafPaths: ["val.a"], leafValues: ["1"] });
  });

  it("key a digest by 64 stable bits", () => {
    expect(rowKey("VFqNlLTJiR3tbX0qjLO67Q2feGsqM1vILazadYZcfEI")).toBe(rowKey("VFqNlLTJiR3tbX0qjLO67Q2feGsqM1vILazadYZcfEI"));
    expect(rowKey("a")).not.toBe(rowKey("b"));
    expect(rowKey("a") < 2n ** 64n && rowKey("a") >= 0n).toBe(true);
  });
});
