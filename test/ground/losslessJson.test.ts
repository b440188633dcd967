import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromPlainJson, JsonFloat, JsonInteger, MAX_DEPTH, parseLossless, stringifyLossless, toPlainJson, type LosslessValue } from "../../services/losslessJson.js";
import { JsonParseError, NotJsonError } from "../../services/errors.js";

const int = (v: bigint | number): JsonInteger => new JsonInteger(BigInt(v));
const float = (v: number): JsonFloat => new JsonFloat(v);
const parseError = (text: string): JsonParseError => {
  try {
    parseLossless(text);
  } catch (e) {
    if (e instanceof JsonParseError) return e;
    throw e;
  }
  throw new Error(`parsed: ${text}`);
};

describe("parseLossless: numbers", () => {
  it("tells integers from floats by how they are written", () => {
    expect(parseLossless("1")).toEqual(int(1));
    expect(parseLossless("1.0")).toEqual(float(1));
    expect(parseLossless("1e2")).toEqual(float(100));
    expect(parseLossless("1E+2")).toEqual(float(100));
    expect(parseLossless("-2.5e-3")).toEqual(float(-0.0025));
    expect(parseLossless("0")).toEqual(int(0));
  });

  it("keeps integers of any size exactly", () => {
    const big = parseLossless("12345678901234567890123");
    expect(big).toBeInstanceOf(JsonInteger);
    expect((big as JsonInteger).value).toBe(12345678901234567890123n);
    expect((parseLossless("-9007199254740993") as JsonInteger).value).toBe(-9007199254740993n);
  });

  it("keeps -0.0 as a float -0, and -0 as the integer 0", () => {
    const negativeZero = parseLossless("-0.0");
    expect(negativeZero).toBeInstanceOf(JsonFloat);
    expect(Object.is((negativeZero as JsonFloat).value, -0)).toBe(true);
    expect(parseLossless("-0")).toEqual(int(0));
  });

  it("reads floats as JSON.parse does, an overflow as Infinity", () => {
    for (const text of ["0.1", "5e-324", "1.7976931348623157e308", "123456789012345680000.0", "2.2250738585072014e-308"]) {
      expect((parseLossless(text) as JsonFloat).value).toBe(JSON.parse(text));
    }
    expect((parseLossless("1e400") as JsonFloat).value).toBe(Infinity);
  });
});

describe("parseLossless: strings", () => {
  it("reads every escape", () => {
    expect(parseLossless(String.raw`"a\"b\\c\/d\be\ff\ng\rh\ti"`)).toBe('a"b\\c/d\be\ff\ng\rh\ti');
    expect(parseLossless(String.raw`"\u00e9\u00E9\u2028"`)).toBe("éé\u2028");
  });

  it("joins surrogate pairs and keeps lone surrogates as JSON.parse does", () => {
    expect(parseLossless(String.raw`"\ud83d\ude00"`)).toBe("😀");
    for (const text of [String.raw`"\ud83d"`, String.raw`"\ude00x"`, String.raw`"\ude00\ud83d"`]) {
      expect(parseLossless(text)).toBe(JSON.parse(text));
    }
  });

  it("takes raw non-ASCII text as it is", () => {
    expect(parseLossless('"é😀\u2028"')).toBe("é😀\u2028");
  });
});

describe("parseLossless: objects and arrays", () => {
  it("keeps key insertion order, integer-like keys included", () => {
    const obj = parseLossless('{"b": 1, "10": 2, "a": 3, "2": 4}');
    expect(obj).toBeInstanceOf(Map);
    expect([...(obj as Map<string, LosslessValue>).keys()]).toEqual(["b", "10", "a", "2"]);
  });

  it("takes a key named __proto__ as an ordinary key", () => {
    const obj = parseLossless('{"__proto__": {"x": 1}, "constructor": 2}') as Map<string, LosslessValue>;
    expect(obj.get("__proto__")).toEqual(new Map([["x", int(1)]]));
    const plain = toPlainJson(obj) as Record<string, unknown>;
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(Object.keys(plain)).toEqual(["__proto__", "constructor"]);
    expect(plain).toEqual(JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}'));
  });

  it("on a duplicate key keeps the first position and the last value", () => {
    const obj = parseLossless('{"a": 1, "b": 2, "a": 3}') as Map<string, LosslessValue>;
    expect([...obj.entries()]).toEqual([["a", int(3)], ["b", int(2)]]);
  });

  it("reads nested values with any JSON whitespace", () => {
    expect(parseLossless(' \t\r\n[ {"a" : [ ] , "b":{}} , true,false ,null ] \n')).toEqual([
      new Map<string, LosslessValue>([["a", []], ["b", new Map()]]),
      true,
      false,
      null,
    ]);
  });
});

describe("parseLossless: errors", () => {
  it.each([
    ["", 0, /end of input/],
    ["[1,]", 3, /expected a JSON value/],
    ['{"a" 1}', 5, /expected ':'/],
    ["{a: 1}", 1, /expected a string key/],
    ["[1 2]", 3, /expected ',' or '\]'/],
    ["01", 1, /after the value/],
    ["1.", 2, /digit after the decimal point/],
    ["1e", 2, /digit in the exponent/],
    ["-", 1, /expected a digit/],
    [".5", 0, /expected a JSON value/],
    ['"abc', 0, /unterminated string/],
    ['"a\nb"', 2, /control character/],
    [String.raw`"\x"`, 1, /bad escape/],
    [String.raw`"\u12g4"`, 1, /bad \\u escape/],
    ["tru", 0, /expected a JSON value/],
    ["NaN", 0, /expected a JSON value/],
    ["Infinity", 0, /expected a JSON value/],
    ["\ufeff{}", 0, /expected a JSON value/],
    ["{} {}", 3, /after the value/],
    ["[1, 2", 5, /end of input/],
  ])("refuses %j at position %d", (text, position, reason) => {
    const error = parseError(text);
    expect(error.position).toBe(position);
    expect(error.message).toMatch(reason);
    expect(error.message).toContain(`position ${position}`);
    expect(() => JSON.parse(text)).toThrow();
  });

  it(`accepts ${MAX_DEPTH} levels of nesting and refuses one more without overflowing the stack`, () => {
    expect(() => parseLossless("[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH))).not.toThrow();
    const tooDeep = parseError("[".repeat(MAX_DEPTH + 1) + "]".repeat(MAX_DEPTH + 1));
    expect(tooDeep.message).toMatch(/nesting deeper than 1000 levels/);
    expect(tooDeep.position).toBe(MAX_DEPTH);
    expect(parseError('{"a":'.repeat(200_000)).message).toMatch(/nesting deeper/);
  });
});

describe("toPlainJson and fromPlainJson", () => {
  it("turns big integers into the nearest JS number and keeps -0.0", () => {
    expect(toPlainJson(parseLossless("[12345678901234567890123, 1.0, -0.0, 1e400]"))).toEqual([1.2345678901234568e22, 1, -0, Infinity]);
  });

  it("makes integral numbers integers and others floats, so 1.0 is lost", () => {
    expect(fromPlainJson(JSON.parse('{"a": 1.0, "b": 1.5, "c": -0.0, "d": [null, "x", true]}'))).toEqual(
      new Map<string, LosslessValue>([["a", int(1)], ["b", float(1.5)], ["c", int(0)], ["d", [null, "x", true]]]),
    );
  });

  it("refuses what is not JSON", () => {
    for (const bad of [undefined, () => 1, NaN, Infinity, new Date(0), [1, undefined], { a: Symbol("s") }]) {
      expect(() => fromPlainJson(bad)).toThrow(NotJsonError);
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => fromPlainJson(cycle)).toThrow(/nesting deeper/);
    expect(fromPlainJson(Object.create(null) as object)).toEqual(new Map());
  });

  it("parseLossless(JSON.stringify(v)) read back with toPlainJson is JSON.parse(JSON.stringify(v))", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = JSON.stringify(v);
        expect(toPlainJson(parseLossless(text))).toEqual(JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });

  it("fromPlainJson then toPlainJson gives the value back", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const plain: unknown = JSON.parse(JSON.stringify(v));
        expect(toPlainJson(fromPlainJson(plain))).toEqual(plain);
      }),
      { numRuns: 300 },
    );
  });
});

describe("stringifyLossless", () => {
  it("writes compact JSON in key order, integers exact and floats as floats", () => {
    const text = '{"z": 1.0, "a": [12345678901234567890123, -0.0, 0, 1e21, 1E-7, 2.50], "s": "é\\n\\"😀", "n": null, "t": true, "e": {}, "l": []}';
    expect(stringifyLossless(parseLossless(text))).toBe('{"z":1.0,"a":[12345678901234567890123,-0.0,0,1e+21,1e-7,2.5],"s":"é\\n\\"😀","n":null,"t":true,"e":{},"l":[]}');
  });

  it("is read back by parseLossless to the same tree", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const tree = parseLossless(JSON.stringify(v));
        expect(parseLossless(stringifyLossless(tree))).toEqual(tree);
      }),
      { numRuns: 300 },
    );
    const floats = parseLossless("[1.0, 100.0, 1e16, 123456789.125, 5e-324, 1.7976931348623157e308]");
    expect(parseLossless(stringifyLossless(floats))).toEqual(floats);
  });

  it("refuses a float that overflowed while parsing", () => {
    expect(() => stringifyLossless(parseLossless("[1e400]"))).toThrow(NotJsonError);
  });
});
