import { JsonParseError, NotJsonError } from "./errors.js";
/**
 * JSON that keeps what `JSON.parse` loses and digests need (spec: "Objects, refs, digests").
 * A digest is computed over the value as Python's `json.dumps` writes it, where `1.0` (a float)
 * and `1` (an int) differ and integers are exact at any size. So a number is kept as a
 * `JsonInteger` (exact, a bigint) or a `JsonFloat` (a JS number; `-0.0` stays -0), decided by
 * how it was written: a fraction or an exponent makes a float, as Python's `json.loads` decides.
 *
 * Objects are `Map`s: a plain object would move integer-like keys ("2", "10") ahead of the others
 * whatever the insertion order, and a key named `__proto__` needs care; a Map keeps insertion
 * order and takes any key. A duplicate key keeps its first position and its last value, as
 * `JSON.parse` and Python's `json.loads` do.
 */

/** Containers nested deeper than this are refused (Python's json refuses about as deep). */
export const MAX_DEPTH = 1000;

/** An integer exactly as written, of any size. */
export class JsonInteger {
  readonly kind = "integer";
  constructor(readonly value: bigint) {}
}

/** A number written with a fraction or an exponent. */
export class JsonFloat {
  readonly kind = "float";
  constructor(readonly value: number) {}
}

export type JsonNumber = JsonInteger | JsonFloat;
export type LosslessObject = Map<string, LosslessValue>;
export type LosslessValue = null | boolean | string | JsonNumber | LosslessValue[] | LosslessObject;

/** Ordinary JS JSON values, as `JSON.parse` returns them. */
export type PlainJson = null | boolean | number | string | PlainJson[] | { [key: string]: PlainJson };


export function isJsonNumber(v: unknown): v is JsonNumber {
  return v instanceof JsonInteger || v instanceof JsonFloat;
}

/** Parses JSON text (RFC 8259, as strict as `JSON.parse`) into a lossless tree. */
export function parseLossless(text: string): LosslessValue {
  return new Parser(text).parseDocument();
}

const ESCAPED: Readonly<Record<string, string>> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const describe = (c: string | undefined): string => (c === undefined ? "end of input" : `character ${JSON.stringify(c)}`);

/** Recursive descent; recursion is bounded by MAX_DEPTH, far below the JS stack's limit. */
class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly text: string) {}

  parseDocument(): LosslessValue {
    const value = this.parseValue();
    this.skipWhitespace();
    if (this.pos < this.text.length) this.fail(`unexpected ${describe(this.text[this.pos])} after the value`);
    return value;
  }

  private fail(reason: string, at = this.pos): never {
    throw new JsonParseError(reason, at);
  }

  private skipWhitespace(): void {
    const t = this.text;
    let c = t.charCodeAt(this.pos);
    while (c === 32 || c === 10 || c === 13 || c === 9) c = t.charCodeAt(++this.pos);
  }

  private parseValue(): LosslessValue {
    this.skipWhitespace();
    const c = this.text[this.pos];
    if (c === "{") return this.parseObject();
    if (c === "[") return this.parseArray();
    if (c === '"') return this.parseString();
    if (c === "-" || (c !== undefined && isDigit(c.charCodeAt(0)))) return this.parseNumber();
    if (this.text.startsWith("true", this.pos)) return this.literal(4, true);
    if (this.text.startsWith("false", this.pos)) return this.literal(5, false);
    if (this.text.startsWith("null", this.pos)) return this.literal(4, null);
    return this.fail(`unexpected ${describe(c)}, expected a JSON value`);
  }

  private literal<T>(length: number, value: T): T {
    this.pos += length;
    return value;
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    this.pos++;
    this.skipWhitespace();
  }

  private parseObject(): LosslessObject {
    this.enter();
    const obj: LosslessObject = new Map();
    if (this.text[this.pos] === "}") return this.leave(obj);
    for (;;) {
      if (this.text[this.pos] !== '"') this.fail(`unexpected ${describe(this.text[this.pos])}, expected a string key`);
      const key = this.parseString();
      this.skipWhitespace();
      if (this.text[this.pos] !== ":") this.fail(`unexpected ${describe(this.text[this.pos])}, expected ':'`);
      this.pos++;
      obj.set(key, this.parseValue());
      if (this.afterItem("}")) return this.leave(obj);
    }
  }

  private parseArray(): LosslessValue[] {
    this.enter();
    const arr: LosslessValue[] = [];
    if (this.text[this.pos] === "]") return this.leave(arr);
    for (;;) {
      arr.push(this.parseValue());
      if (this.afterItem("]")) return this.leave(arr);
    }
  }

  /** After an item: true at the closing bracket, false after a comma (then skips to the next item). */
  private afterItem(close: "}" | "]"): boolean {
    this.skipWhitespace();
    const c = this.text[this.pos];
    if (c === close) return true;
    if (c !== ",") this.fail(`unexpected ${describe(c)}, expected ',' or '${close}'`);
    this.pos++;
    this.skipWhitespace();
    return false;
  }

  private leave<T>(container: T): T {
    this.depth--;
    this.pos++;
    return container;
  }

  private parseString(): string {
    const t = this.text;
    const start = this.pos;
    let pos = start + 1;
    let chunkStart = pos;
    let out = "";
    for (;;) {
      if (pos >= t.length) this.fail("unterminated string", start);
      const c = t.charCodeAt(pos);
      if (c === 34) {
        this.pos = pos + 1;
        return out + t.slice(chunkStart, pos);
      }
      if (c < 0x20) this.fail("control character in a string (must be escaped)", pos);
      if (c !== 92) {
        pos++;
        continue;
      }
      out += t.slice(chunkStart, pos);
      const e = t[pos + 1];
      if (e === "u") {
        const hex = t.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail("bad \\u escape (expected 4 hex digits)", pos);
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else {
        const decoded = e === undefined ? undefined : ESCAPED[e];
        if (decoded === undefined) this.fail(`bad escape \\${e ?? ""}`, pos);
        out += decoded;
        pos += 2;
      }
      chunkStart = pos;
    }
  }

  /** `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; a fraction or an exponent makes a float. */
  private parseNumber(): JsonNumber {
    const t = this.text;
    const start = this.pos;
    if (t[this.pos] === "-") this.pos++;
    if (t[this.pos] === "0") this.pos++;
    else this.digits("a digit");
    let isFloat = false;
    if (t[this.pos] === ".") {
      this.pos++;
      this.digits("a digit after the decimal point");
      isFloat = true;
    }
    if (t[this.pos] === "e" || t[this.pos] === "E") {
      this.pos++;
      if (t[this.pos] === "+" || t[this.pos] === "-") this.pos++;
      this.digits("a digit in the exponent");
      isFloat = true;
    }
    const written = t.slice(start, this.pos);
    return isFloat ? new JsonFloat(Number(written)) : new JsonInteger(BigInt(written));
  }

  private digits(what: string): void {
    const from = this.pos;
    while (isDigit(this.text.charCodeAt(this.pos))) this.pos++;
    if (this.pos === from) this.fail(`unexpected ${describe(this.text[this.pos])}, expected ${what}`);
  }
}

/**
 * The tree as ordinary JS JSON values. Integers beyond 2^53 become the nearest JS number (lossy,
 * what the API answers today); floats keep their value, `-0.0` as -0; a float that overflowed
 * while parsing (`1e400`) is Infinity, which `JSON.stringify` writes as null. A `__proto__` key
 * becomes an own property, as `JSON.parse` makes it.
 */
export function toPlainJson(v: LosslessValue, depth = 0): PlainJson {
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (v instanceof JsonInteger) return Number(v.value);
  if (v instanceof JsonFloat) return v.value;
  if (depth >= MAX_DEPTH) throw new NotJsonError(`nesting deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(v)) return v.map((item) => toPlainJson(item, depth + 1));
  const obj: { [key: string]: PlainJson } = {};
  for (const [key, item] of v) {
    const plain = toPlainJson(item, depth + 1);
    if (key === "__proto__") Object.defineProperty(obj, key, { value: plain, enumerable: true, writable: true, configurable: true });
    else obj[key] = plain;
  }
  return obj;
}

/**
 * A JS JSON value (from `JSON.parse`) as a lossless tree: integral numbers become integers, the
 * others floats. What `JSON.parse` already lost stays lost: `1.0` arrives as 1 and becomes the
 * integer 1, `-0.0` becomes the integer 0, big integers are already rounded. That is why a request
 * body whose values are digested is read with `parseLossless`, not through this. Throws
 * NotJsonError on anything that is not JSON (undefined, functions, non-finite numbers, class
 * instances, cycles).
 */
export function fromPlainJson(v: unknown, depth = 0): LosslessValue {
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new NotJsonError(`${v} is not a JSON number`);
    return Number.isInteger(v) ? new JsonInteger(BigInt(v)) : new JsonFloat(v);
  }
  if (typeof v === "bigint") return new JsonInteger(v);
  if (typeof v !== "object") throw new NotJsonError(`a ${typeof v} is not a JSON value`);
  if (depth >= MAX_DEPTH) throw new NotJsonError(`nesting deeper than ${MAX_DEPTH} levels (or a cycle)`);
  if (Array.isArray(v)) return v.map((item: unknown) => fromPlainJson(item, depth + 1));
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) throw new NotJsonError("only plain objects are JSON objects");
  const obj: LosslessObject = new Map();
  for (const [key, item] of Object.entries(v)) obj.set(key, fromPlainJson(item, depth + 1));
  return obj;
}

/**
 * Compact JSON text of a lossless tree, keys in their order, that `parseLossless` reads back to
 * the same tree: integers exact, floats always with a fraction or an exponent (`1.0`, `-0.0`,
 * `1e+21`) so that they stay floats for any reader that tells them apart (Python's `json`, a
 * digest). Throws NotJsonError on a float that overflowed while parsing (`1e400`): JSON has no
 * way to write it.
 */
export function stringifyLossless(v: LosslessValue): string {
  const out: string[] = [];
  writeLossless(v, out, 0);
  return out.join("");
}

function writeLossless(v: LosslessValue, out: string[], depth: number): void {
  if (v === null || typeof v === "boolean" || typeof v === "string") out.push(JSON.stringify(v));
  else if (v instanceof JsonInteger) out.push(v.value.toString());
  else if (v instanceof JsonFloat) out.push(floatText(v.value));
  else if (depth >= MAX_DEPTH) throw new NotJsonError(`nesting deeper than ${MAX_DEPTH} levels`);
  else if (Array.isArray(v)) {
    out.push("[");
    v.forEach((item, i) => {
      if (i > 0) out.push(",");
      writeLossless(item, out, depth + 1);
    });
    out.push("]");
  } else {
    out.push("{");
    let first = true;
    for (const [key, item] of v) {
      out.push(first ? "" : ",", JSON.stringify(key), ":");
      first = false;
      writeLossless(item, out, depth + 1);
    }
    out.push("}");
  }
}

function floatText(x: number): string {
  if (!Number.isFinite(x)) throw new NotJsonError(`a number too large for a float (${x}) cannot be written as JSON`);
  if (Object.is(x, -0)) return "-0.0";
  const text = String(x);
  return /[.e]/.test(text) ? text : `${text}.0`;
}
