/**
 * A span attribute that repeats the call's inputs or output as JSON text, stored as a mark
 * (store/calls/ioCopies.ts): the stored text without the copies reads back to the written
 * text byte for byte, whatever the attributes, inputs and output; a copy written exactly is
 * marked, one written otherwise is kept.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { withCopiesAsNull, withIoCopies, withoutIoCopies } from "../../services/store/calls/ioCopies.js";

const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const object = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 5 }) as fc.Arbitrary<JsonObject>;

/** A call as the OTLP mapping makes one of an attribute carrying its inputs and one its output, or of neither. */
const call = fc
  .record({ attributes: object, input: json, output: json, inputKey: fc.string({ maxLength: 6 }), outputKey: fc.string({ maxLength: 6 }), copied: fc.boolean() })
  .map(({ attributes, input, output, inputKey, outputKey, copied }) => {
    const inputs = typeof input === "object" && input !== null && !Array.isArray(input) ? input : { value: input };
    const attrs: JsonObject = { ...attributes };
    if (copied) {
      attrs[inputKey] = JSON.stringify(input);
      attrs[outputKey] = JSON.stringify(output);
    }
    return { attributes: JSON.stringify({ model: "m", otel: { attributes: attrs } }), inputs: JSON.stringify(inputs), output: JSON.stringify(output) };
  });

const MESSAGES = [{ role: "user", content: "Plan a trip to Lyon" }];
const ANSWER = [{ role: "assistant", content: 'Take the "TGV" at 07:56' }];

describe("the inputs and output a span's attributes repeat", () => {
  it("read back to the attributes' text, byte for byte", () => {
    fc.assert(
      fc.property(call, fc.boolean(), ({ attributes, inputs, output }, ended) => {
        const out = ended ? output : null;
        const stored = withoutIoCopies(attributes, inputs, out);
        expect(withIoCopies(stored, inputs, out)).toBe(attributes);
      }),
      { numRuns: 500 },
    );
  });

  it("marks an attribute holding exactly the inputs' value and one holding the output", () => {
    const attributes = JSON.stringify({ otel: { attributes: { gen_ai: { input: { messages: JSON.stringify(MESSAGES) }, output: { messages: JSON.stringify(ANSWER) }, system: "openai" } } } });
    const inputs = JSON.stringify({ value: MESSAGES });
    const output = JSON.stringify(ANSWER);
    const stored = withoutIoCopies(attributes, inputs, output);
    expect(stored).toBe('{"otel":{"attributes":{"gen_ai":{"input":{"messages":\u0001V},"output":{"messages":\u0001O},"system":"openai"}}}}');
    expect(withIoCopies(stored, inputs, output)).toBe(attributes);
    expect(JSON.parse(withCopiesAsNull(stored))).toEqual({ otel: { attributes: { gen_ai: { input: { messages: null }, output: { messages: null }, system: "openai" } } } });
    expect(withCopiesAsNull(attributes)).toBe(attributes);
    // An object carried whole.
    const args = { city: "Lyon", nights: 2, station: "Part-Dieu" };
    const tool = JSON.stringify({ otel: { attributes: { input: { value: JSON.stringify(args) } } } });
    expect(withoutIoCopies(tool, JSON.stringify(args), null)).toBe('{"otel":{"attributes":{"input":{"value":\u0001I}}}}');
  });

  it("keeps a copy written otherwise, a short one, and a key that repeats the text", () => {
    const spaced = JSON.stringify(MESSAGES, null, 1);
    const inputs = JSON.stringify({ value: MESSAGES });
    const attributes = JSON.stringify({ otel: { attributes: { gen_ai: { input: { messages: spaced } } } } });
    expect(withoutIoCopies(attributes, inputs, null)).toBe(attributes);
    const short = JSON.stringify({ otel: { attributes: { input: { value: '{"a":1}' } } } });
    expect(withoutIoCopies(short, '{"a":1}', null)).toBe(short);
    const asKey = JSON.stringify({ [JSON.stringify(MESSAGES)]: 1 });
    expect(withoutIoCopies(asKey, inputs, null)).toBe(asKey);
  });

  it("refuses to read marked attributes without the inputs and output", () => {
    const attributes = JSON.stringify({ otel: { attributes: { output: JSON.stringify(ANSWER) } } });
    const stored = withoutIoCopies(attributes, "{}", JSON.stringify(ANSWER));
    expect(stored).not.toBe(attributes);
    expect(() => withIoCopies(stored, undefined, undefined)).toThrow(/without its inputs and output/);
  });
});
