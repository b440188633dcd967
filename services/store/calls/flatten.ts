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
import { RowBinaryWriter } from "../rowBinary.js";

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

/** The leaf columns of a call but `json_paths`, which the row writer takes as RowBinary (`FlattenedRow`). */
export type LeafColumns = Omit<FlattenedJson, "json_paths">;

/**
 * The leaf columns of a call, and its `json_paths` column as RowBinary (an Array(String)) for
 * the row writer: a buffer shared by every call with the same paths, never to be written into.
 * `fileLeaves`: the values among `json_values` whose path has a `.files.` segment (what the
 * Weave clients write inline as `files` maps: digests a call references, refTargets.ts).
 */
export interface FlattenedRow {
  readonly columns: LeafColumns;
  readonly pathsRowBinary: Buffer;
  readonly fileLeaves: readonly string[];
}

/** While a call is walked: its columns, its file leaves, and the sequence of its paths so far (its length: the leaves so far). */
interface Walk {
  readonly columns: LeafColumns;
  sequence: PathSequence;
  fileLeaves: string[] | null;
}

const NO_FILE_LEAVES: readonly string[] = Object.freeze([]);

export function flattenCallJson(parts: CallJsonParts): FlattenedJson {
  const row = walked(parts);
  return { json_paths: row.sequence.texts(), ...row.columns };
}

export function flattenCallRow(parts: CallJsonParts): FlattenedRow {
  const row = walked(parts);
  return { columns: row.columns, pathsRowBinary: row.sequence.rowBinary(), fileLeaves: row.fileLeaves ?? NO_FILE_LEAVES };
}

function walked(parts: CallJsonParts): Walk {
  const row: Walk = { columns: { json_values: [], json_long_paths: [], json_long_hashes: [] }, sequence: NO_PATHS, fileLeaves: null };
  for (const part of PART_ORDER) {
    if (row.sequence.length >= MAX_LEAVES) break;
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
  /** Whether the path has a `.files.` segment (`FlattenedRow.fileLeaves`), found once per path. */
  readonly underFiles: boolean;
  constructor(
    readonly text: string,
    /** Whether the path is kept (the same object for every call that has it). */
    readonly kept = true,
  ) {
    this.underFiles = text.includes(".files.");
  }

  child(key: string): LeafPath {
    const found = this.children?.get(key);
    if (found) return found;
    if (keptPaths >= MAX_KEPT_PATHS) return new LeafPath(`${this.text}.${key}`, false);
    keptPaths++;
    const made = new LeafPath(`${this.text}.${key}`);
    (this.children ??= new Map()).set(key, made);
    return made;
  }
}

export const MAX_KEPT_SEQUENCES = 20_000;
export const MAX_KEPT_SEQUENCE_BYTES = 4 * 1024 * 1024;
let keptSequences = 0;
let keptSequenceBytes = 0;

/**
 * The paths a call's walk emitted so far, in order. Calls of one kind emit the same paths in
 * the same order, so their `json_paths` column is encoded once per distinct sequence and
 * copied whole into each row, instead of path by path. A sequence is followed one kept path
 * at a time (a lookup by the path object); at most MAX_KEPT_SEQUENCES steps and
 * MAX_KEPT_SEQUENCE_BYTES of encoded columns are kept; past either, or after a path that is
 * not kept, the sequence is made for the call at hand and dropped with it.
 */
class PathSequence {
  private next: Map<LeafPath, PathSequence> | null = null;
  private encoded: Buffer | null = null;
  constructor(
    readonly path: LeafPath | null,
    readonly previous: PathSequence | null,
    readonly length: number,
    readonly kept: boolean,
  ) {}

  then(path: LeafPath): PathSequence {
    const found = this.next?.get(path);
    if (found) return found;
    const keep = this.kept && path.kept && keptSequences < MAX_KEPT_SEQUENCES;
    const made = new PathSequence(path, this, this.length + 1, keep);
    if (!keep) return made;
    keptSequences++;
    (this.next ??= new Map()).set(path, made);
    return made;
  }

  /** The paths, in order. */
  texts(): string[] {
    const texts = new Array<string>(this.length);
    for (let at: PathSequence = this; at.path !== null; at = at.previous!) texts[at.length - 1] = at.path.text;
    return texts;
  }

  /** The sequence as a RowBinary Array(String). */
  rowBinary(): Buffer {
    if (this.encoded) return this.encoded;
    const encoded = Buffer.from(new RowBinaryWriter(64 + 64 * this.length).strings(this.texts()).bytes());
    if (this.kept && keptSequenceBytes + encoded.length <= MAX_KEPT_SEQUENCE_BYTES) {
      keptSequenceBytes += encoded.length;
      this.encoded = encoded;
    }
    return encoded;
  }
}

const NO_PATHS = new PathSequence(null, null, 0, true);

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

function emit(row: Walk, leafPath: LeafPath, value: string): void {
  const columns = row.columns;
  row.sequence = row.sequence.then(leafPath);
  if (leafPath.underFiles) (row.fileLeaves ??= []).push(cutLeaf(value));
  if (fitsLeaf(value)) {
    columns.json_values.push(value);
    return;
  }
  columns.json_values.push(cutLeaf(value));
  columns.json_long_paths.push(leafPath.text);
  columns.json_long_hashes.push(leafHash(value));
}

const skipped = (value: unknown): boolean => value === undefined || typeof value === "function" || typeof value === "symbol";

function walk(raw: unknown, path: LeafPath, depth: number, row: Walk): void {
  if (row.sequence.length >= MAX_LEAVES) return;
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
    for (let i = 0; i < value.length && row.sequence.length < MAX_LEAVES; i++) {
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
    if (row.sequence.length >= MAX_LEAVES) return;
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
