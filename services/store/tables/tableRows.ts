import { createHash } from "node:crypto";
import { pythonFloat } from "../../digests.js";
import { ValidationError } from "../../errors.js";
import { JsonFloat, JsonInteger, parseLossless, type LosslessObject, type LosslessValue } from "../../losslessJson.js";
import { cutLeaf, MAX_JSON_DEPTH, MAX_LEAVES } from "../calls/flatten.js";

/**
 * A table row as it is stored: read from its JSON text as the client sent it, digested as
 * the Weave clients digest it, written back as compact JSON text that reads as the same
 * value (keys in the order sent, integers exact, floats as floats: `1.0` stays `1.0`), and
 * flattened into leaves for sorting.
 */
export interface PreparedRow {
  readonly digest: string;
  readonly key: bigint;
  /** The JSON text answers carry verbatim. */
  readonly val: string;
  readonly sizeBytes: number;
  readonly leafPaths: readonly string[];
  readonly leafValues: readonly string[];
}

/** The root of leaf paths: a row's field `question` is the leaf `val.question`. */
export const LEAF_ROOT = "val";

/**
 * A 64-bit key of a row digest: the first 8 bytes of its SHA-256. The join key between
 * positions, leaves and rows (a collision needs ~2^32 distinct rows in one project).
 */
export function rowKey(digest: string): bigint {
  return createHash("sha256").update(digest, "utf8").digest().readBigUInt64LE(0);
}

/**
 * Reads one row from its JSON text (a slice of the request) and checks it can be stored:
 * an object whose numbers all have a JSON text. `loc` places errors in the request
 * (`["body", "table", "rows", 3]`).
 */
export function parseRow(text: string, loc: readonly (string | number)[]): LosslessObject {
  const value = parseLossless(text);
  if (!(value instanceof Map)) throw ValidationError.at([...loc], "a table row must be a JSON object");
  if (!allFinite(value)) throw ValidationError.at([...loc], "a number in the row is too large for a double");
  return value;
}

/** The stored form of a row read by parseRow, whose digest is known. */
export function storedRow(row: LosslessObject, digest: string): PreparedRow {
  const val = compactJson(row);
  const leaves = flattenRow(row);
  return { digest, key: rowKey(digest), val, sizeBytes: Buffer.byteLength(val, "utf8"), leafPaths: leaves.paths, leafValues: leaves.values };
}

function allFinite(v: LosslessValue): boolean {
  if (v instanceof JsonFloat) return Number.isFinite(v.value);
  if (Array.isArray(v)) return v.every(allFinite);
  if (v instanceof Map) {
    for (const item of v.values()) if (!allFinite(item)) return false;
  }
  return true;
}

/**
 * Compact JSON text of a lossless value: keys in insertion order, strings as JSON.stringify
 * writes them, integers exact, floats in Python's `repr` form (always a float when read
 * back). Non-finite floats (refused by parseRow) would be written as `null`.
 */
export function compactJson(value: LosslessValue): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof JsonInteger) return value.value.toString();
  if (value instanceof JsonFloat) return Number.isFinite(value.value) ? pythonFloat(value.value) : "null";
  if (Array.isArray(value)) return `[${value.map(compactJson).join(",")}]`;
  let out = "{";
  for (const [key, item] of value) out += `${out.length > 1 ? "," : ""}${JSON.stringify(key)}:${compactJson(item)}`;
  return `${out}}`;
}

interface Leaves {
  paths: string[];
  values: string[];
}

/**
 * The row's leaves as calls flatten their JSON parts (store/calls/flatten.ts: same bounds, same
 * leaf texts): strings raw, numbers as JavaScript writes them, `true`/`false`/`null`, `{}`
 * and `[]` for empty containers, the compact JSON of a subtree deeper than MAX_JSON_DEPTH.
 */
export function flattenRow(row: LosslessValue): Leaves {
  const out: Leaves = { paths: [], values: [] };
  walk(row, LEAF_ROOT, 0, out);
  return out;
}

function emit(out: Leaves, path: string, value: string): void {
  out.paths.push(path);
  out.values.push(cutLeaf(value));
}

function walk(v: LosslessValue, path: string, depth: number, out: Leaves): void {
  if (out.paths.length >= MAX_LEAVES) return;
  if (v === null) return emit(out, path, "null");
  if (typeof v === "boolean") return emit(out, path, v ? "true" : "false");
  if (typeof v === "string") return emit(out, path, v);
  if (v instanceof JsonInteger) return emit(out, path, v.value.toString());
  if (v instanceof JsonFloat) return emit(out, path, Number.isFinite(v.value) ? String(v.value) : "null");
  const entries: [string, LosslessValue][] = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : [...v];
  if (entries.length === 0) return emit(out, path, Array.isArray(v) ? "[]" : "{}");
  if (depth >= MAX_JSON_DEPTH) return emit(out, path, compactJson(v));
  for (const [key, item] of entries) {
    if (out.paths.length >= MAX_LEAVES) return;
    walk(item, `${path}.${key}`, depth + 1, out);
  }
}
