/**
 * The one pass over a span's attributes (services/otlp/keyTable.ts) against the table of
 * attributes.ts: it finds every key that `lookup` finds, with the same value, whatever the
 * attributes and their order; and where two conventions set one field, the table's order
 * decides, not the attributes'.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SPAN_KEYS } from "../../services/otlp/attributes.js";
import { FoundKeys, KeyTable } from "../../services/otlp/keyTable.js";
import { lookup, nestDottedKeys } from "../../services/otlp/nest.js";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { mapAttributes } from "./support.js";

const TABLE_KEYS = SPAN_KEYS.keys.flat().map((key) => key.key);
const PARTS = [...new Set(TABLE_KEYS.flatMap((key) => key.split("."))), "0", "1", "role", "content", "step", ""];

/** Keys near the table's: a table key, a prefix of it, an extension of it, with its `*` parts filled in or not. */
const attributeKey = fc
  .tuple(fc.constantFrom(...TABLE_KEYS), fc.nat(6), fc.array(fc.constantFrom(...PARTS), { maxLength: 2 }), fc.constantFrom(...PARTS))
  .map(([key, cut, extension, anyPart]) => {
    const parts = key.split(".").map((part) => (part === "*" && anyPart !== "" ? anyPart : part));
    return [...parts.slice(0, Math.max(1, parts.length - (cut > 3 ? cut - 3 : 0))), ...(cut <= 1 ? extension : [])].join(".");
  });

const leaf = fc.oneof(
  fc.constantFrom("text", "42", " 7 ", '{"a": 1, "model": "m"}', "[1, 2]", "{broken", "true"),
  fc.integer({ min: -5, max: 500 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);
/** Values as decoding gives them, key-value lists with keys from the same parts (dotted or not). */
const value: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(leaf, { maxLength: 2 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...PARTS), attributeKey), tie("value"), { maxKeys: 3 }),
  ),
})).value;

const attributes = fc.array(fc.tuple(fc.oneof(attributeKey, attributeKey, fc.constantFrom(...PARTS)), value), { maxLength: 12 }).map((entries) => {
  const flat: JsonObject = {};
  for (const [key, v] of entries) Object.defineProperty(flat, key, { value: v, enumerable: true, writable: true, configurable: true });
  return flat;
});

describe("FoundKeys", () => {
  const found = new FoundKeys(SPAN_KEYS);

  it("finds every table key that lookup finds, with lookup's value", () => {
    fc.assert(
      fc.property(attributes, (flat) => {
        const nested = nestDottedKeys(flat);
        found.read(flat, nested);
        SPAN_KEYS.keys.forEach((keys, field) => {
          keys.forEach((key, rank) => {
            const expected = lookup(flat, nested, key);
            const seen = (found.mask(field) & (1 << rank)) !== 0 ? found.value(field, rank) : undefined;
            expect(seen, key.key).toBe(expected);
          });
        });
      }),
      { numRuns: 3000 },
    );
  });

  // otel_dump keeps the attributes as sent when a value is a key-value list: left out.
  it("maps a span's attributes to the same call in any order", () => {
    fc.assert(
      fc.property(attributes, fc.nat(), (flat, seed) => {
        const entries = Object.entries(flat);
        const shuffled = entries.map((entry, i) => [entry, (i * 7919 + seed) % 1009] as const).sort((a, b) => a[1] - b[1]).map(([entry]) => entry);
        const reordered: JsonObject = {};
        for (const [key, v] of shuffled) Object.defineProperty(reordered, key, { value: v, enumerable: true, writable: true, configurable: true });
        const call = (attrs: JsonObject) => JSON.stringify({ ...mapAttributes(attrs).call, otel_dump: null });
        expect(call(reordered)).toBe(call(flat));
      }),
      { numRuns: 500 },
    );
  });

  it("takes a `*` part as any one part and a key-value list as the keys under it", () => {
    const table = new KeyTable({ field: ["a.*.c", "a.b.d"] });
    const keys = new FoundKeys(table);
    keys.read({ "a.x.c": 1 }, nestDottedKeys({ "a.x.c": 1 }));
    expect([keys.mask(0), keys.first(0)]).toEqual([0b01, 1]);
    const flat = { a: { b: { d: 2 } } };
    keys.read(flat, nestDottedKeys(flat));
    expect([keys.mask(0), keys.first(0)]).toEqual([0b11, 2]);
  });

  it("refuses a field of more keys than its bits hold", () => {
    expect(() => new KeyTable({ field: Array.from({ length: 32 }, (_, i) => `k${i}`) })).toThrow(/more than 31/);
  });
});

describe("mapSpans: precedence between conventions, in one pass", () => {
  /** The attributes in the order given and reversed: both must map to `expected`. */
  const bothOrders = (entries: [string, JsonValue][]) => [Object.fromEntries(entries), Object.fromEntries([...entries].reverse())];

  it("takes the model from the table's first key present, whichever comes first", () => {
    for (const attrs of bothOrders([["llm.model_name", "oi"], ["langfuse.observation.model.name", "lf"], ["gen_ai.response.model", "genai"]])) {
      const { call } = mapAttributes({ ...attrs, "gen_ai.usage.input_tokens": 3 });
      expect([call.attributes["model"], call.summary]).toEqual(["genai", { usage: { genai: { input_tokens: 3 } } }]);
    }
  });

  it("takes inputs from a flattened family before a later key, in either order", () => {
    for (const attrs of bothOrders([["input.value", "later"], ["gen_ai.prompt.0.content", "first"]])) {
      expect(mapAttributes(attrs).call.inputs).toEqual({ "0": { content: "first" } });
    }
  });

  it("takes a usage field from the next key when the first holds no number", () => {
    for (const attrs of bothOrders([["gen_ai.usage.prompt_tokens", "many"], ["llm.token_count.prompt", 9], ["ai.usage.promptTokens", 8]])) {
      expect(mapAttributes(attrs).call.summary).toEqual({ usage: { unknown: { prompt_tokens: 9 } } });
    }
  });

  it("leaves a family out when its first present key holds no text, as before", () => {
    for (const attrs of bothOrders([["gen_ai.response.model", ["a"]], ["gen_ai.request.model", "m"]])) {
      expect(mapAttributes(attrs).call.attributes["model"]).toBeUndefined();
    }
  });

  it("reads a key inside a key-value list sent at its prefix, and not a family a shorter key's value stands in", () => {
    expect(mapAttributes({ gen_ai: { response: { model: "kv" } } }).call.attributes["model"]).toBe("kv");
    expect(mapAttributes({ gen_ai: "x", "gen_ai.prompt": "own" }).call.inputs).toEqual({ value: "own" });
    expect(mapAttributes({ gen_ai: "x", "gen_ai.prompt.0.content": "hidden" }).call.inputs).toEqual({});
  });

  it("merges metadata as the trace's then the span's, in either order", () => {
    for (const attrs of bothOrders([["langfuse.observation.metadata", '{"k": "span", "s": 1}'], ["langfuse.trace.metadata", '{"k": "trace", "t": 1}']])) {
      expect(JSON.stringify(mapAttributes(attrs).call.attributes["metadata"])).toBe('{"k":"span","t":1,"s":1}');
    }
  });
});
