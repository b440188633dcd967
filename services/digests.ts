/**
 * Digests of objects, table rows, tables and files, byte-identical to the Weave clients' (spec:
 * "Objects, refs, digests"; vectors in digest-vectors.json). An object's digest is taken over the
 * text Python's `json.dumps(val, sort_keys=True)` writes, so `pythonJsonDumps` writes exactly that.
 */
import { createHash } from "node:crypto";
import { JsonFloat, JsonInteger, MAX_DEPTH, type LosslessValue } from "./losslessJson.js";
import { DigestInputError } from "./errors.js";


/** SHA-256, URL-safe base64 without padding, then `-` → `X` and `_` → `Y`: 43 characters. */
export function bytesDigest(bytes: Uint8Array): string {
  return weaveBase64(createHash("sha256").update(bytes).digest());
}

const weaveBase64 = (sha256: Buffer): string => sha256.toString("base64url").replace(/-/g, "X").replace(/_/g, "Y");

export function objectDigest(value: LosslessValue): string {
  return bytesDigest(Buffer.from(pythonJsonDumps(value), "utf8"));
}

export function rowDigest(row: LosslessValue): string {
  if (!(row instanceof Map)) throw new DigestInputError(`a table row must be a JSON object, not ${kindOf(row)}`);
  return objectDigest(row);
}

/** Hex SHA-256 of the row digests written one after the other. */
export function tableDigest(rowDigests: readonly string[]): string {
  const hash = createHash("sha256");
  for (const digest of rowDigests) hash.update(digest, "utf8");
  return hash.digest("hex");
}

export function fileDigest(content: Uint8Array): string {
  return bytesDigest(content);
}

/** `fileDigest` over content that arrives in pieces: `update` with each piece in order, then `digest` once. */
export interface FileDigester {
  update(piece: Uint8Array): void;
  digest(): string;
}

export function createFileDigester(): FileDigester {
  const hash = createHash("sha256");
  return {
    update: (piece) => void hash.update(piece),
    digest: () => weaveBase64(hash.digest()),
  };
}

function kindOf(v: LosslessValue): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (v instanceof JsonInteger || v instanceof JsonFloat) return "a number";
  return `a ${typeof v}`;
}

/**
 * The text of Python's `json.dumps(value, sort_keys=True)`: separators `", "` and `": "`, only
 * ASCII out (`ensure_ascii`), keys sorted by code point, integers exact, floats as `repr`.
 */
export function pythonJsonDumps(value: LosslessValue): string {
  const out: string[] = [];
  writeValue(value, out, 0);
  return out.join("");
}

function writeValue(v: LosslessValue, out: string[], depth: number): void {
  if (v === null) out.push("null");
  else if (typeof v === "boolean") out.push(v ? "true" : "false");
  else if (typeof v === "string") out.push(pythonString(v));
  else if (v instanceof JsonInteger) out.push(v.value.toString());
  else if (v instanceof JsonFloat) out.push(pythonFloat(v.value));
  else {
    if (depth >= MAX_DEPTH) throw new DigestInputError(`nesting deeper than ${MAX_DEPTH} levels`);
    if (Array.isArray(v)) writeArray(v, out, depth + 1);
    else writeObject(v, out, depth + 1);
  }
}

function writeArray(items: LosslessValue[], out: string[], depth: number): void {
  out.push("[");
  items.forEach((item, i) => {
    if (i > 0) out.push(", ");
    writeValue(item, out, depth);
  });
  out.push("]");
}

function writeObject(obj: Map<string, LosslessValue>, out: string[], depth: number): void {
  out.push("{");
  [...obj.keys()].sort(compareCodePoints).forEach((key, i) => {
    if (i > 0) out.push(", ");
    out.push(pythonString(key), ": ");
    writeValue(obj.get(key) ?? null, out, depth);
  });
  out.push("}");
}

const isHighSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff;

/**
 * Orders strings as Python orders `str`: by code point. Comparing UTF-16 units (JS's default)
 * differs when a surrogate meets a unit at U+E000 or above: U+1F600 (units D83D DE00) sorts
 * after U+FFFF in Python but before it by units. So when the first unit that differs is the low
 * half of a pair in either string, step back to the pair's high half, and compare whole code
 * points; a lone surrogate counts as its own code point, as in Python.
 */
export function compareCodePoints(a: string, b: string): number {
  // The rows a writer sorts mostly share their project: equal strings take one native comparison, not the loop.
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const splitsAPair = isLowSurrogate(a.charCodeAt(i)) || isLowSurrogate(b.charCodeAt(i));
  if (i > 0 && splitsAPair && isHighSurrogate(a.charCodeAt(i - 1))) i--;
  return (a.codePointAt(i) ?? 0) - (b.codePointAt(i) ?? 0);
}

const SHORT_ESCAPES: Readonly<Record<number, string>> = { 0x22: '\\"', 0x5c: "\\\\", 0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t", 0x08: "\\b", 0x0c: "\\f" };
const NEEDS_NO_ESCAPE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Python's ASCII string form: printable ASCII as is, `\"` `\\` `\n` `\r` `\t` `\b` `\f`, else `\uxxxx` per UTF-16 unit. */
function pythonString(s: string): string {
  if (NEEDS_NO_ESCAPE.test(s)) return `"${s}"`;
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    if (unit >= 0x20 && unit <= 0x7e && unit !== 0x22 && unit !== 0x5c) out += s[i];
    else out += SHORT_ESCAPES[unit] ?? `\\u${unit.toString(16).padStart(4, "0")}`;
  }
  return out + '"';
}

/**
 * Python's `repr(float)`: the shortest digits that read back to the same double (the digits JS's
 * own `String(x)` picks), written in exponent form when the decimal exponent is below -4 or at
 * least 16 (`1e-05`, `1e+16`, `1.5e+300`), else in fixed form with at least one decimal (`100.0`).
 * Non-finite values are written as Python's json does by default.
 */
export function pythonFloat(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  const { digits, pointAt } = shortestDigits(Math.abs(x));
  if (digits === "") return `${sign}0.0`;
  const exponent = pointAt - 1;
  if (exponent < -4 || exponent >= 16) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (pointAt <= 0) return `${sign}0.${"0".repeat(-pointAt)}${digits}`;
  if (pointAt >= digits.length) return `${sign}${digits}${"0".repeat(pointAt - digits.length)}.0`;
  return `${sign}${digits.slice(0, pointAt)}.${digits.slice(pointAt)}`;
}

/**
 * The significant digits of a non-negative finite x without leading or trailing zeros (empty
 * for 0), and where the decimal point goes: x = 0.<digits> × 10^pointAt.
 */
function shortestDigits(x: number): { digits: string; pointAt: number } {
  const [mantissa = "", exponentPart] = String(x).split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  let digits = whole + fraction;
  let pointAt = whole.length + (exponentPart === undefined ? 0 : Number(exponentPart));
  const leadingZeros = digits.length - digits.replace(/^0+/, "").length;
  digits = digits.slice(leadingZeros).replace(/0+$/, "");
  pointAt -= leadingZeros;
  return { digits, pointAt };
}
