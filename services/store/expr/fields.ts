import { InvalidFieldError } from "../../errors.js";
import type { ParamBuilder } from "../sql.js";

/**
 * The field model of the query language: what a `$getField` path or a `sort_by` field may
 * name, as typed definitions that render their own SQL. Nothing else reaches SQL as an
 * identifier. A resource (calls, feedback, cost records, ...) composes the field sets it
 * offers; the one compiler (compile.ts) and the one sort (sort.ts) take the composition.
 *
 * Kinds:
 * - `string`: a String / Nullable(String) column or expression;
 * - `number`: a numeric column or expression (Int64 / Float64, maybe Nullable);
 * - `datetime`: Int64 microseconds since the epoch;
 * - `json_leaf`: a flattened JSON leaf (see store/calls/flatten.ts): Nullable(String), NULL when
 *   the path is absent, else the leaf's text (strings raw, numbers as JS writes them).
 */
export type FieldKind = "string" | "number" | "datetime" | "json_leaf";

export interface Field {
  readonly sql: string;
  readonly kind: FieldKind;
  /** Whether the SQL can be NULL (the compiler wraps comparisons on nullable fields). */
  readonly nullable: boolean;
  /**
   * Compared only with values of its own kind, never read as another kind (the typed
   * columns of a record such as a price); see compile.ts for what that refuses. Absent:
   * the field is converted to what it is compared with, as call and feedback fields are,
   * whose text often holds numbers.
   */
  readonly strict?: true;
  /**
   * For a field whose stored text may be cut (a JSON leaf, see store/calls/flatten.ts): the exact
   * condition "the whole value is `text`" (never NULL), when comparing the stored text with
   * `text` would not be exact; undefined when it would be.
   */
  readonly exactEquals?: (text: string, pb: ParamBuilder) => string | undefined;
}

/** What a field may depend on beyond the row: the project being queried. */
export interface FieldScope {
  readonly projectId?: string;
}

/**
 * One group of fields. `resolve` answers undefined for a path that is not this set's (so the
 * next set is asked), throws InvalidFieldError for a path that is this set's but malformed
 * (`inputs.a'b`), and adds parameters to `pb` only when it answers.
 */
export interface FieldSet {
  /** For error messages: what the set answers. */
  readonly name: string;
  /** Names and patterns it knows (`id`, `inputs.<path>`), for error messages. */
  readonly known: readonly string[];
  resolve(path: string, pb: ParamBuilder, scope: FieldScope): Field | undefined;
}

/** Field sets composed: itself a set (so compositions nest), and total through `field`. */
export interface Fields extends FieldSet {
  /** The field at `path`, or an InvalidFieldError listing every field known. */
  field(path: string, pb: ParamBuilder, scope?: FieldScope): Field;
}

/** A path as an error message shows it: cut, since it comes from the request. */
const shown = (path: string): string => (path.length > 200 ? `${path.slice(0, 200)}…` : path);

/** Tries each set in order; the first that answers wins. */
export function composeFields(...sets: readonly FieldSet[]): Fields {
  const name = sets.map((s) => s.name).join(" + ");
  const known = sets.flatMap((s) => s.known);
  const resolve = (path: string, pb: ParamBuilder, scope: FieldScope): Field | undefined => {
    for (const set of sets) {
      const field = set.resolve(path, pb, scope);
      if (field) return field;
    }
    return undefined;
  };
  return {
    name,
    known,
    resolve,
    field(path, pb, scope = {}) {
      const field = resolve(path, pb, scope);
      if (!field) throw new InvalidFieldError(`unknown field: ${shown(path)} (known: ${known.join(", ")})`);
      return field;
    },
  };
}

/** Fields by exact name, each rendering its SQL when named. */
export function namedFields(name: string, table: Readonly<Record<string, (pb: ParamBuilder, scope: FieldScope) => Field>>): FieldSet {
  return {
    name,
    known: Object.keys(table),
    resolve: (path, pb, scope) => (Object.hasOwn(table, path) ? table[path]?.(pb, scope) : undefined),
  };
}

/** Columns by name: the SQL is the column name. */
export function columnFields(
  name: string,
  columns: Readonly<Record<string, { readonly kind: FieldKind; readonly nullable: boolean }>>,
  options: { readonly strict?: true } = {},
): FieldSet {
  const table = Object.fromEntries(
    Object.entries(columns).map(([column, { kind, nullable }]): [string, () => Field] => {
      const field: Field = { sql: column, kind, nullable, ...options };
      return [column, () => field];
    }),
  );
  return namedFields(name, table);
}

// ---- key paths -------------------------------------------------------------------------

/**
 * Conservative key syntax: letters, digits and a few punctuation marks common in keys.
 * Quotes, backticks, backslashes, braces and control characters are refused even though
 * the path is bound as a parameter anyway.
 */
const SEGMENT = /^[\p{L}\p{N}_\-$@:+/# ]+$/u;
export const MAX_PATH_CHARS = 1024;

/**
 * Checks the dotted keys below a JSON root (`a.b.0`) and returns them: at most `maxDepth`
 * keys, each of SEGMENT's characters, `path` (the whole path named, for messages and the
 * length bound) at most MAX_PATH_CHARS long.
 */
export function keyPathSegments(keys: string, maxDepth: number, path = keys): string[] {
  if (path.length > MAX_PATH_CHARS) throw new InvalidFieldError(`field path longer than ${MAX_PATH_CHARS} characters`);
  const segments = keys.split(".");
  if (segments.length > maxDepth) throw new InvalidFieldError(`field path deeper than ${maxDepth} keys below its root: ${path}`);
  for (const segment of segments) {
    if (!SEGMENT.test(segment)) throw new InvalidFieldError(`invalid key ${JSON.stringify(segment)} in field path ${path}`);
  }
  return segments;
}

// ---- JSON leaves -----------------------------------------------------------------------

/** Where a table keeps its flattened JSON: parallel Array(String) columns of paths and leaf texts. */
export interface JsonLeafColumns {
  /** The roots leaves are under: a path is `<root>.<key>...` (`inputs.a.b`, `payload.score`). */
  readonly roots: readonly string[];
  /** The column of flattened paths, each written in full (`<root>.<key>...`). */
  readonly paths: string;
  /** The column of leaf texts, aligned with `paths`. */
  readonly values: string;
  /** Most keys a path may have below its root (the flattening's depth). */
  readonly maxDepth: number;
  /** Subtrees left to other sets (`summary.weave`: computed call fields). */
  readonly reserved?: readonly string[];
  /** Where the leaves that were cut are listed, for exact `$eq` on long values. */
  readonly cut?: LeafCut;
}

/**
 * How leaf texts are cut: each text longer than `maxChars` is stored as `cut(text)`, its path
 * listed in the `paths` column and `hash(text)` at the same index of the `hashes` column.
 */
export interface LeafCut {
  readonly maxChars: number;
  readonly paths: string;
  readonly hashes: string;
  cut(text: string): string;
  hash(text: string): string;
}

/**
 * `<leaf> = text`, exact although leaves are cut: a text that fits is equal to a leaf that
 * was not cut (a cut leaf is at least `maxChars - 1` long: it never splits a surrogate pair);
 * a longer text, to a cut leaf of its own prefix whose whole value has its hash. `leaf` is
 * the leaf's SQL (NULL when absent), `path` the bound path parameter.
 */
export function exactLeafEquals(cut: LeafCut, leaf: string, path: string, text: string, pb: ParamBuilder): string | undefined {
  if (text.length < cut.maxChars - 1) return undefined;
  if (text.length <= cut.maxChars) return `(ifNull(${leaf} = ${pb.str(text)}, 0) AND NOT has(${cut.paths}, ${path}))`;
  const hash = pb.str(cut.hash(text));
  return `(ifNull(${leaf} = ${pb.str(cut.cut(text))}, 0) AND arrayExists((lp, lh) -> lp = ${path} AND lh = ${hash}, ${cut.paths}, ${cut.hashes}))`;
}

export interface JsonLeafFields extends FieldSet {
  /** The leaf at an exact flattened path (checked by the caller); NULL when the row has none. */
  leafSql(path: string, pb: ParamBuilder): string;
}

/** The set of JSON leaves `<root>.<key>...` over one pair of flattened columns. */
export function jsonLeafFields(name: string, columns: JsonLeafColumns): JsonLeafFields {
  const { roots, paths, values, maxDepth, reserved = [], cut } = columns;
  const leafOf = (p: string): string => `if(indexOf(${paths}, ${p}) = 0, NULL, ${values}[indexOf(${paths}, ${p})])`;
  const leafSql = (path: string, pb: ParamBuilder): string => leafOf(pb.str(path));
  const isReserved = (path: string) => reserved.some((r) => path === r || path.startsWith(`${r}.`));
  return {
    name,
    known: roots.map((root) => `${root}.<path>`),
    leafSql,
    resolve(path, pb) {
      const dot = path.indexOf(".");
      if (dot < 0 || !roots.includes(path.slice(0, dot)) || isReserved(path)) return undefined;
      keyPathSegments(path.slice(dot + 1), maxDepth, path);
      const p = pb.str(path);
      const sql = leafOf(p);
      if (!cut) return { sql, kind: "json_leaf", nullable: true };
      return { sql, kind: "json_leaf", nullable: true, exactEquals: (text, b) => exactLeafEquals(cut, sql, p, text, b) };
    },
  };
}
