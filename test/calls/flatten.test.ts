import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { flattenCallJson, flattenCallRow, MAX_JSON_DEPTH, MAX_KEPT_PATHS, MAX_LEAF_CHARS, MAX_LEAVES } from "../../services/store/calls/flatten.js";
import { RowBinaryWriter } from "../../services/store/rowBinary.js";

/** `json_paths` as the row writer sends it: a RowBinary Array(String). */
const pathsColumn = (paths: readonly string[]): Buffer => Buffer.from(new RowBinaryWriter().strings(paths).bytes());

function pairs(parts: Partial<Record<"attributes" | "inputs" | "output" | "summary", unknown>>): [string, string][] {
  const { json_paths, json_values } = flattenCallJson({
    attributes: parts.attributes,
    inputs: parts.inputs,
    output: parts.output,
    summary: parts.summary,
  });
  expect(json_paths).toHaveLength(json_values.length);
  return json_paths.map((p, i) => [p, json_values[i] as string]);
}

describe("flattenCallJson", () => {
  it("writes dotted paths with array indexes and encodes leaves", () => {
    expect(
      pairs({
        inputs: {
          messages: [{ role: "user", content: "hi" }],
          n: 5,
          f: 1.5,
          ok: true,
          no: false,
          nothing: null,
          obj: {},
          arr: [],
          s: "5",
        },
      }),
    ).toEqual([
      ["inputs.messages.0.role", "user"],
      ["inputs.messages.0.content", "hi"],
      ["inputs.n", "5"],
      ["inputs.f", "1.5"],
      ["inputs.ok", "true"],
      ["inputs.no", "false"],
      ["inputs.nothing", "null"],
      ["inputs.obj", "{}"],
      ["inputs.arr", "[]"],
      ["inputs.s", "5"],
    ]);
  });

  it("emits a scalar part as the leaf of its own name, and skips absent parts", () => {
    expect(pairs({ output: "plain text" })).toEqual([["output", "plain text"]]);
    expect(pairs({ output: null })).toEqual([["output", "null"]]);
    expect(pairs({ output: 3 })).toEqual([["output", "3"]]);
    expect(pairs({ inputs: {} })).toEqual([["inputs", "{}"]]);
    expect(pairs({})).toEqual([]);
  });

  it("walks summary, attributes, output, inputs in that order", () => {
    expect(pairs({ inputs: { a: 1 }, output: { b: 2 }, attributes: { c: 3 }, summary: { d: 4 } }).map(([p]) => p)).toEqual([
      "summary.d",
      "attributes.c",
      "output.b",
      "inputs.a",
    ]);
  });

  it("skips undefined like JSON.stringify, writes big and odd numbers as JS does", () => {
    expect(pairs({ inputs: { u: undefined, list: [undefined, 1], big: 1e21, tiny: 1e-7, neg: -0, inf: Infinity } })).toEqual([
      ["inputs.list.0", "null"],
      ["inputs.list.1", "1"],
      ["inputs.big", "1e+21"],
      ["inputs.tiny", "1e-7"],
      ["inputs.neg", "0"],
      ["inputs.inf", "null"],
    ]);
    expect(pairs({ inputs: { only: undefined } })).toEqual([["inputs", "{}"]]);
  });

  it("keeps strings raw: quotes, newlines, non-ASCII", () => {
    const s = "O'Reilly \"q\" \\ \n Привет 🎉";
    expect(pairs({ attributes: { s } })).toEqual([["attributes.s", s]]);
  });

  it(`stops at ${MAX_LEAVES} leaves per call`, () => {
    const many = Array.from({ length: MAX_LEAVES + 50 }, (_, i) => i);
    const result = pairs({ summary: { x: 1 }, inputs: { many }, output: { kept: true } });
    expect(result).toHaveLength(MAX_LEAVES);
    expect(result.slice(0, 2)).toEqual([
      ["summary.x", "1"],
      ["output.kept", "true"],
    ]);
    expect(result.at(-1)).toEqual([`inputs.many.${MAX_LEAVES - 3}`, String(MAX_LEAVES - 3)]);
    expect(pairs({ output: many, attributes: { late: 1 } })).toHaveLength(MAX_LEAVES);
  });

  it(`cuts values to ${MAX_LEAF_CHARS} characters without splitting a surrogate pair`, () => {
    const long = "a".repeat(MAX_LEAF_CHARS + 10);
    expect(pairs({ inputs: { long } })).toEqual([["inputs.long", "a".repeat(MAX_LEAF_CHARS)]]);
    const emoji = "a".repeat(MAX_LEAF_CHARS - 1) + "🎉tail";
    const [[, cut] = ["", ""]] = pairs({ inputs: { emoji } });
    expect(cut).toBe("a".repeat(MAX_LEAF_CHARS - 1));
  });

  it(`writes the JSON text of a subtree ${MAX_JSON_DEPTH} keys down`, () => {
    let deep: unknown = { leaf: [1, 2] };
    for (let i = MAX_JSON_DEPTH; i >= 1; i--) deep = { [`k${i}`]: deep };
    const keys = Array.from({ length: MAX_JSON_DEPTH }, (_, i) => `k${i + 1}`).join(".");
    expect(pairs({ inputs: deep })).toEqual([[`inputs.${keys}`, '{"leaf":[1,2]}']]);

    let shallow: unknown = "x";
    for (let i = MAX_JSON_DEPTH; i >= 1; i--) shallow = { [`k${i}`]: shallow };
    expect(pairs({ inputs: shallow })).toEqual([[`inputs.${keys}`, "x"]]);
  });

  it("writes objects with toJSON as JSON does", () => {
    expect(pairs({ attributes: { at: new Date("2026-01-01T00:00:00Z") } })).toEqual([["attributes.at", "2026-01-01T00:00:00.000Z"]]);
  });

  it("gives the paths' RowBinary column beside them, the same for every call that has the paths", () => {
    const parts = fc.record({ attributes: fc.jsonValue(), inputs: fc.jsonValue(), output: fc.jsonValue(), summary: fc.jsonValue() });
    fc.assert(
      fc.property(parts, (p) => {
        const { columns, pathsRowBinary } = flattenCallRow(p);
        const { json_paths, ...leaves } = flattenCallJson(p);
        expect(pathsRowBinary).toEqual(pathsColumn(json_paths));
        expect(columns).toEqual(leaves);
        expect(flattenCallRow(structuredClone(p)).pathsRowBinary).toEqual(pathsRowBinary);
      }),
      { numRuns: 300 },
    );
  });

  it(`gives the right paths past the ${MAX_KEPT_PATHS.toLocaleString("en")} it keeps`, () => {
    const calls = Math.ceil(MAX_KEPT_PATHS / MAX_LEAVES) + 2;
    for (let c = 0; c < calls; c++) {
      const keys = Array.from({ length: MAX_LEAVES }, (_, k) => `call${c}-ключ${k}`);
      const parts = { attributes: Object.fromEntries(keys.map((k) => [k, 1])), inputs: undefined, output: undefined, summary: undefined };
      const paths = keys.map((k) => `attributes.${k}`);
      expect(flattenCallJson(parts).json_paths).toEqual(paths);
      expect(flattenCallRow(parts).pathsRowBinary).toEqual(pathsColumn(paths));
    }
  });
});
