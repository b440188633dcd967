import { describe, expect, it } from "vitest";
import { documentSpan, elementSpans, memberSpan, pathSpan } from "../../services/query/jsonSpans.js";

const texts = (text: string, path: string[]) => {
  const span = pathSpan(text, documentSpan(text), path);
  return span ? [...elementSpans(text, span)].map((s) => text.slice(s.start, s.end)) : null;
};

describe("JSON spans", () => {
  it("finds each element's exact text, through strings holding brackets, quotes and escapes", () => {
    const text = ` { "x": "a]}\\"", "table" : { "rows" : [ {"a": "}\\\\"} , [1, [2]] ,3.50e1, "s\\"]" ,true,null ] , "y": {} } } `;
    expect(texts(text, ["table", "rows"])).toEqual(['{"a": "}\\\\"}', "[1, [2]]", "3.50e1", '"s\\"]"', "true", "null"]);
    for (const element of texts(text, ["table", "rows"])!) expect(() => JSON.parse(element)).not.toThrow();
  });

  it("resolves a key named twice to its last value and a key written with escapes to its name, as JSON.parse does", () => {
    const text = '{"rows": [1], "\\u0072ows": [2, 3]}';
    expect(texts(text, ["rows"])).toEqual(["2", "3"]);
    expect((JSON.parse(text) as { rows: number[] }).rows).toEqual([2, 3]);
  });

  it("answers null for a missing key or a value that is not an object", () => {
    const text = '{"a": [1], "b": "x"}';
    const doc = documentSpan(text);
    expect(memberSpan(text, doc, "c")).toBeNull();
    expect(pathSpan(text, doc, ["b", "c"])).toBeNull();
    expect(pathSpan(text, doc, ["a", "c"])).toBeNull();
    expect(texts("[]", [])).toEqual([]);
    expect(texts('{"rows": []}', ["rows"])).toEqual([]);
  });
});
