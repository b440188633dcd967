import { describe, expect, it } from "vitest";
import { JsonParseError } from "../../services/errors.js";
import { checkJsonSyntax } from "../../services/jsonSyntax.js";

/** checkJsonSyntax accepts exactly what JSON.parse accepts. */
const VALID = [
  "0", "-0", "1.5e+10", "-12.25E-3", '"x"', '"\\u00e9\\n\\"\\\\\\/"', "true", "false", "null", " [ ] ", "{}",
  '{"a": [1, {"b": null}, "c"], "d": {"e": {}}}', "[[[[]]]]", '{"a":1,"a":2}', '\t{"k" : "v"}\r\n', '"é😀"',
];
const INVALID = [
  "", " ", "01", "-", "1.", ".5", "+1", "1e", "[1,]", "[,1]", "{,}", '{"a":1,}', '{"a" 1}', "{a:1}", "[1 2]", '"\\x"', '"\\u12g4"',
  '"a\nb"', '"open', "[1", '{"a":1', "[1]]", "{}}", "tru", "nul", "NaN", "[1] 2", "'a'", '{"a":1}{', "[}", "{]",
];

describe("checkJsonSyntax", () => {
  it("accepts what JSON.parse accepts", () => {
    for (const text of VALID) {
      expect(() => JSON.parse(text), text).not.toThrow();
      expect(() => checkJsonSyntax(text), text).not.toThrow();
    }
  });

  it("refuses what JSON.parse refuses, with a 400 JsonParseError", () => {
    for (const text of INVALID) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(() => checkJsonSyntax(text), text).toThrow(JsonParseError);
    }
  });

  it("scans a large body", () => {
    const rows = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ i, q: `question ${i} é`, tags: [i % 3, null, true] }));
    expect(() => checkJsonSyntax(`{"table": {"project_id": "a/b", "rows": [${rows.join(",")}]}}`)).not.toThrow();
    expect(() => checkJsonSyntax(`{"table": {"project_id": "a/b", "rows": [${rows.join(",")}}}`)).toThrow(JsonParseError);
  });
});
