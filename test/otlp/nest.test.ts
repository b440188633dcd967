import { describe, it, expect } from "vitest";
import { dottedKey, lookup, MAX_KEY_DEPTH, nestDottedKeys } from "../../services/otlp/nest.js";

describe("nestDottedKeys", () => {
  it("nests dotted keys", () => {
    expect(nestDottedKeys({ "gen_ai.request.temperature": 0.5, "gen_ai.request.model": "m", plain: true })).toEqual({
      gen_ai: { request: { temperature: 0.5, model: "m" } },
      plain: true,
    });
  });

  it("keeps the rest of a key literally when its prefix holds a value, whatever the order", () => {
    const expected = { a: { b: 1, "b.c": 2, "b.c.d": 3 } };
    expect(nestDottedKeys({ "a.b": 1, "a.b.c": 2, "a.b.c.d": 3 })).toEqual(expected);
    expect(nestDottedKeys({ "a.b.c.d": 3, "a.b.c": 2, "a.b": 1 })).toEqual(expected);
  });

  it(`nests at most ${MAX_KEY_DEPTH} levels and keeps the rest of a deeper key as one key`, () => {
    const key = Array.from({ length: 40 }, (_, i) => `k${i}`).join(".");
    let node: unknown = nestDottedKeys({ [key]: "v" });
    for (let i = 0; i < MAX_KEY_DEPTH; i++) node = (node as Record<string, unknown>)[`k${i}`];
    expect(node).toEqual({ [Array.from({ length: 8 }, (_, i) => `k${i + 32}`).join(".")]: "v" });
  });

  it("does not merge into object values (kvlists)", () => {
    expect(nestDottedKeys({ a: { x: 1 }, "a.y": 2 })).toEqual({ a: { x: 1 }, "a.y": 2 });
  });

  it("keeps empty segments and __proto__ as plain keys", () => {
    const nested = nestDottedKeys(Object.fromEntries([["__proto__.polluted", 1], ["x..y", 2], ["z.", 3]]));
    expect(JSON.stringify(nested)).toBe('{"__proto__":{"polluted":1},"x":{"":{"y":2}},"z":{"":3}}');
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
    expect(Object.getPrototypeOf(nested)).toBe(Object.prototype);
  });
});

describe("lookup", () => {
  const flat = { "input.value": "v", "gen_ai.prompt.0.content": "hi", "a.b": 1, "a.b.c": 2, n: null };
  const nested = nestDottedKeys(flat);

  it("finds a flat key first, then a nested family", () => {
    expect(lookup(flat, nested, dottedKey("input.value"))).toBe("v");
    expect(lookup(flat, nested, dottedKey("gen_ai.prompt"))).toEqual({ "0": { content: "hi" } });
    expect(lookup(flat, nested, dottedKey("a.b.c"))).toBe(2);
  });

  it("treats missing keys and null values as absent", () => {
    expect(lookup(flat, nested, dottedKey("missing.key"))).toBeUndefined();
    expect(lookup(flat, nested, dottedKey("n"))).toBeUndefined();
    expect(lookup(flat, nested, dottedKey("input.value.deeper"))).toBeUndefined();
    expect(lookup(flat, nested, dottedKey("toString"))).toBeUndefined();
  });
});
