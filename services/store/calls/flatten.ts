/**
 * Flattens the JSON parts of a call (attributes, inputs, output, summary) into the parallel
 * `json_paths` / `json_values` columns of `calls`, so that a filter or a sort on a dotted
 * path is one `indexOf` over an array instead of JSON parsing at read time (ClickHouse
 * 18.16 has no JSONExtract).
 *
 * Paths: `<part>.<key>.<key>...`; array elements by index (`inputs.messages.0.content`).
 * A scalar part is the leaf of the part's own name (`output`). Keys that contain a dot are
 * not escaped: `{"a.b": 1}` and `{"a": {"b": 1}}` give the same path.
 *
 * Leaf encoding (only leaves are emitted, never a whole object or array):
 * - strings as they are (so the string "5" and the number 5 both read "5");
 * - numbers as JavaScript writes them (`String(n)`: `1.5`, `1e+21`), non-finite as `null`;
 * - booleans `true` / `false`, null `null`;
 * - an empty object `{}`, an empty array `[]`;
 * - `undefined` (and functions, symbols) are skipped, as JSON.stringify skips them.
 *
 * Bounds, so one call cannot blow up a row:
 * - at most MAX_LEAVES (1000) leaves per call; the parts are walked in the order of
 *   PART_ORDER (summary first: it is small and feeds the computed status) and leaves past
 *   the bound are dropped;
 * - every value is cut to MAX_LEAF_CHARS (4096) UTF-16 code units, never splitting a
 *   surrogate pair; for a value that was cut, its path and `leafHash` of the whole value go
 *   to `json_long_paths` / `json_long_hashes`, so that `$eq` on a long value stays exact
 *   (fields.ts, `exactLeafEquals`);
 * - a non-empty object or array MAX_JSON_DEPTH (12) keys below its part is not walked
 *   further: its JSON text (cut like any value) is the leaf. So a path has at most
 *   1 + MAX_JSON_DEPTH segments.
 */

import { createHash } from "node:crypto";

export const MAX_LEAVES = 1000;
export const MAX_LEAF_CHARS = 4096;
export const MAX_JSON_DEPTH = 12;

export const JSON_PARTS = ["attributes", "inputs", "output", "summary"] as const;
export type JsonPart = (typeof JSON_PARTS)[number];

/** The order in which parts spend the leaf budget. */
const PART_ORDER: readonly JsonPart[] = ["summary", "attributes", "output", "inputs"];

export type CallJsonParts = Record<JsonPart, unknown>;

export interface FlattenedJson {
  json_paths: string[];
  json_values: string[];
  /** The paths among json_paths whose value was cut, and `leafHash` of each whole value. */
  json_long_paths: string[];
  json_long_hashes: string[];
}

/** The leaf columns of a call, and its paths in UTF-8 for the row writer (buffers shared by every call with the path: never write into them). */
export interface FlattenedRow {
  readonly columns: FlattenedJson;
  readonly pathBytes: Buffer[];
}

export function flattenCallJson(parts: CallJsonParts): FlattenedJson {
  return flattenCallRow(parts).columns;
}

export function flattenCallRow(parts: CallJsonParts): FlattenedRow {
  const row: FlattenedRow = { columns: { json_paths: [], json_values: [], json_long_paths: [], json_long_hashes: [] }, pathBytes: [] };
  for (const part of PART_ORDER) {
    if (row.columns.json_paths.length >= MAX_LEAVES) break;
    walk(parts[part], PART_PATHS[part], 0, row);
  }
  return row;
}

export const MAX_KEPT_PATHS = 20_000;
let keptPaths = 0;

/**
 * A path and the paths below it. Calls of one kind share their paths, so each path is made
 * once and kept: walking a call looks its paths up instead of joining strings, and every
 * call's `json_paths` hold the same (flat) strings. At most MAX_KEPT_PATHS are kept (keys
 * that are ids, say, would otherwise grow the tree without end); past that, new paths are
 * made for the call at hand and dropped with it.
 */
class LeafPath {
  private children: Map<string, LeafPath> | null = null;
  private encoded: Buffer | null = null;
  constructor(readonly text: string) {}

  get utf8(): Buffer {
    return (this.encoded ??= Buffer.from(this.text, "utf8"));
  }

  child(key: string): LeafPath {
    const found = this.children?.get(key);
    if (found) return found;
    const made = new LeafPath(`${this.text}.${key}`);
    if (keptPaths >= MAX_KEPT_PATHS) return made;
    keptPaths++;
    (this.children ??= new Map()).set(key, made);
    return made;
  }
}

const PART_PATHS: Record<JsonPart, LeafPath> = {
  attributes: new LeafPath("attributes"),
  inputs: new LeafPath("inputs"),
  output: new LeafPath("output"),
  summary: new LeafPath("summary"),
};

/** Whether `cutLeaf` keeps all of `text`. */
export const fitsLeaf = (text: string): boolean => text.length <= MAX_LEAF_CHARS;

/** What identifies a cut value: the first 128 bits of the SHA-256 of its UTF-8, in hex. */
export function leafHash(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 32);
}

/** Cuts a value to MAX_LEAF_CHARS code units without leaving half a surrogate pair. */
export function cutLeaf(text: string): string {
  if (text.length <= MAX_LEAF_CHARS) return text;
  let end = MAX_LEAF_CHARS;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end);
}

function emit(row: FlattenedRow, leafPath: LeafPath, value: string): void {
  const columns = row.columns;
  const path = leafPath.text;
  columns.json_paths.push(path);
  row.pathBytes.push(leafPath.utf8);
  if (fitsLeaf(value)) {
    columns.json_values.push(value);
    return;
  }
  columns.json_values.push(cutLeaf(value));
  columns.json_long_paths.push(path);
  columns.json_long_hashes.push(leafHash(value));
}

const skipped = (value: unknown): boolean => value === undefined || typeof value === "function" || typeof value === "symbol";

function walk(raw: unknown, path: LeafPath, depth: number, row: FlattenedRow): void {
  const leaves = row.columns.json_paths;
  if (leaves.length >= MAX_LEAVES) return;
  const value = withToJson(raw);
  switch (typeof value) {
    case "undefined":
    case "function":
    case "symbol":
      return;
    case "string":
      return emit(row, path, value);
    case "number":
      return emit(row, path, Number.isFinite(value) ? String(value) : "null");
    case "bigint":
      return emit(row, path, value.toString());
    case "boolean":
      return emit(row, path, value ? "true" : "false");
  }
  if (value === null) return emit(row, path, "null");
  if (Array.isArray(value)) {
    if (value.length === 0) return emit(row, path, "[]");
    if (depth >= MAX_JSON_DEPTH) return emit(row, path, jsonText(value));
    for (let i = 0; i < value.length && leaves.length < MAX_LEAVES; i++) {
      // JSON.stringify writes a skipped array element as null; so do we.
      const element: unknown = value[i];
      walk(skipped(element) ? null : element, path.child(String(i)), depth + 1, row);
    }
    return;
  }
  const object = value as Record<string, unknown>;
  let empty = true;
  for (const key in object) {
    if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
    const child = object[key];
    if (skipped(child)) continue;
    if (empty) {
      if (depth >= MAX_JSON_DEPTH) return emit(row, path, jsonText(value));
      empty = false;
    }
    if (leaves.length >= MAX_LEAVES) return;
    walk(child, path.child(key), depth + 1, row);
  }
  if (empty) emit(row, path, "{}");
}

/** Objects that define toJSON (Date) are written as JSON.stringify would write them. */
function withToJson(value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return (value as { toJSON: () => unknown }).toJSON();
  }
  return value;
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) ?? "null";
  } catch {
    // Only a cycle or a throwing toJSON gets here; parsed request bodies have neither.
    return "null";
  }
}
