import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { realisticBatchBodies } from "../../bench/callBodies.js";
import { jsonRequest, requestSpans } from "../../bench/otlpSpans.js";
import { checkJsonBytes } from "../../services/jsonBounds.js";
import { parseInPieces, parseJsonBody } from "../../services/jsonPieces.js";

/** Pieces of a few bytes, from bodies of any size: every boundary case is reached by small inputs. */
const TINY = { minBytes: 0, pieceBytes: 8 };
const value = fc.jsonValue({ maxDepth: 3, stringUnit: "binary" });

/** What parsing gives, as its text (key order and -0 included), or the error thrown. */
function outcome(parse: () => unknown): { text: string } | { error: true } {
  try {
    const parsed = parse();
    return { text: JSON.stringify(parsed, (_k, v: unknown) => (Object.is(v, -0) ? "-0" : v)) };
  } catch {
    return { error: true };
  }
}

function expectSameAsWhole(text: string): void {
  const bytes = Buffer.from(text, "utf8");
  let array: ReturnType<typeof checkJsonBytes>;
  try {
    array = checkJsonBytes(bytes, 256);
  } catch {
    return; // refused before parsing
  }
  const whole = outcome(() => JSON.parse(text.replace(/^\uFEFF/, "")));
  const sent = Buffer.from(bytes);
  expect(outcome(() => parseJsonBody(bytes, array, TINY))).toEqual(whole);
  // The pieces' brackets are written over the body only while each is decoded.
  expect(bytes.equals(sent)).toBe(true);
}

describe("request bodies parsed in pieces (services/jsonPieces.ts)", () => {
  it("give what JSON.parse of the whole text gives, for objects around arrays in any layout", () => {
    const body = fc.record({
      before: fc.dictionary(fc.string({ maxLength: 4 }), value, { maxKeys: 3 }),
      key: fc.string({ maxLength: 6 }),
      elements: fc.array(value, { maxLength: 12 }),
      after: fc.dictionary(fc.string({ maxLength: 4 }), value, { maxKeys: 3 }),
      indent: fc.constantFrom(0, 1, "\t", " \r\n "),
    });
    fc.assert(
      fc.property(body, ({ before, key, elements, after, indent }) => {
        const object = { ...before, [key]: elements, ...after };
        expectSameAsWhole(JSON.stringify(object, null, indent));
        expectSameAsWhole(`\uFEFF${JSON.stringify(object)}`);
      }),
      { numRuns: 1_000 },
    );
  });

  it("give what JSON.parse of the whole text gives, for arrays nested in objects and arrays at any depth", () => {
    const wrapper = fc.oneof(
      fc.record({ kind: fc.constant("object" as const), key: fc.string({ maxLength: 4 }), before: fc.dictionary(fc.string({ maxLength: 3 }), value, { maxKeys: 2 }), after: fc.dictionary(fc.string({ maxLength: 3 }), value, { maxKeys: 2 }) }),
      fc.record({ kind: fc.constant("array" as const), before: fc.array(value, { maxLength: 2 }), after: fc.array(value, { maxLength: 2 }) }),
    );
    const body = fc.record({ elements: fc.array(value, { maxLength: 12 }), wrappers: fc.array(wrapper, { maxLength: 4 }), indent: fc.constantFrom(0, 1, " \r\n ") });
    fc.assert(
      fc.property(body, ({ elements, wrappers, indent }) => {
        let inner: unknown = elements;
        for (const w of wrappers) inner = w.kind === "array" ? [...w.before, inner, ...w.after] : { ...w.before, [w.key]: inner, ...w.after };
        expectSameAsWhole(JSON.stringify(inner, null, indent));
      }),
      { numRuns: 1_000 },
    );
  });

  it("give what JSON.parse gives, or throw as it throws, for any text", () => {
    const soup = fc
      .array(fc.constantFrom("[", "]", "{", "}", ",", ":", '"', '"k"', '"a"', "1", " ", "\\", "\\u0061", "null", "-0", "\uFEFF"), { maxLength: 40 })
      .map((tokens) => tokens.join(""));
    fc.assert(fc.property(soup, expectSameAsWhole), { numRuns: 5_000 });
  });

  it("give what JSON.parse gives for keys given twice, spelled otherwise, or special", () => {
    for (const text of [
      '{"batch":[1],"batch":[2,3]}',
      '{"batch":[1,2],"batch":[]}',
      '{"batch":[],"batch":[1,2]}',
      '{"b\\u0061tch":[1,2],"batch":[]}',
      '{"batch":[1,2],"b\\u0061tch":[]}',
      '{"__proto__":[1,2]}',
      '{"constructor":[1,2]}',
      '{"a":"batch","batch":[1,2]}',
      '{"batch":[1,,2]}',
      '{"batch":[1,2,]}',
      '{"batch":[,]}',
      '{"batch":[ ]}',
      '{"batch":["a long element",]}',
      '{"batch":["a long element",,"another long one"]}',
      '{"batch":["a long element", ,]}',
      '{"batch" : \n[1,\n2]}',
      '{"batch" "x":[1,2]}',
      '{"batch"::[1,2]}',
      '{"batch":[1,2]} x',
      '{"batch":[1,2}]',
      '[{"batch":[1,2]}]',
      '[1,2,3]',
      '{"a":{"spans":[1,2,3]},"a":{"spans":[]}}',
      '{"a":{"spans":[1,2,3],"spans":[]}}',
      '{"a":{"spans":[1,2,3],"spans":"\\u0000"}}',
      '{"a":[{"s":[1,2,3]}],"a":[{"s":[]}]}',
      '{"__proto__":{"s":[1,2,3]}}',
      '{"a":{"b" [1,2,3]}}',
      '{"a":{[1,2,3]}}',
      '{"a":1,[1,2,3]}',
    ]) expectSameAsWhole(text);
  });

  it("parse a 500-part upsert_batch in pieces", () => {
    const body = Buffer.from(realisticBatchBodies("acme/p", 1_000)[0]!);
    const array = checkJsonBytes(body, 256);
    const { batch } = JSON.parse(body.toString()) as { batch: unknown[] };
    expect(body.length).toBeGreaterThan(128 * 1024);
    expect(array?.commas).toHaveLength(batch.length - 1);
    const pieces = parseInPieces(body, array!);
    expect(pieces).toEqual(JSON.parse(body.toString()));
    expect(parseJsonBody(body, array)).toEqual(pieces);
  });

  it("parse an OTLP/JSON export's spans in pieces", () => {
    const body = jsonRequest(requestSpans(1));
    const array = checkJsonBytes(body, 256);
    const whole = JSON.parse(body.toString()) as { resourceSpans: [{ scopeSpans: [{ spans: unknown[] }] }] };
    expect(body.length).toBeGreaterThan(128 * 1024);
    expect(array?.commas).toHaveLength(whole.resourceSpans[0].scopeSpans[0].spans.length - 1);
    const pieces = parseInPieces(body, array!);
    expect(pieces).toEqual(whole);
    expect(parseJsonBody(body, array)).toEqual(pieces);
  });
});
