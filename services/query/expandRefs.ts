import type { SortBy } from "../contract/common.js";
import type { Query } from "../contract/queryExpr.js";
import { ClientError, RefParseError } from "../errors.js";
import { parseRef, projectIdOf, type WeaveRef } from "../refs.js";
import type { CallsReadRepository } from "../store/calls/callsRead.js";
import { checkExpandColumn, expandedFields, expansionOf, type ExpandedField } from "../store/calls/expandedFields.js";
import { cutLeaf } from "../store/calls/flatten.js";
import { LEAF_ROOT } from "../store/tables/tableRows.js";
import type { FieldSet } from "../store/expr/fields.js";
import type { RefResolver } from "./refValues.js";

/**
 * `expand_columns` on /calls/stream_query and /calls/query_stats (spec: "expand_columns on
 * the calls query"; SQL side: store/calls/expandedFields.ts).
 *
 * - Which refs expand: object and op refs and table-row refs (`.../table/<digest>/id/<row>`),
 *   with any path after them, of the queried project only. A ref into another project is
 *   never read (no value of another project reaches the answer or decides a filter); call
 *   refs and bare table refs are not expanded (as the Weave trace server expands object refs
 *   only). A ref that does not resolve (unknown or deleted version, unknown row, a path that
 *   leads nowhere) stays its ref string.
 * - Filters and sorts (`$getField`, `sort_by`) on a path below an expand column read the
 *   resolved value: fieldsFor resolves, before the query runs, the distinct refs the
 *   project's calls hold at the outermost column, and the nested columns level by level.
 *   Up to MAX_EXPANDED_REFS refs are resolved here and bound into the query. Past that, at
 *   a column that is not nested (one level), the refs to table rows (`.../id/<row digest>`,
 *   by a table ref or a dataset's `attr/rows`) are resolved inside ClickHouse
 *   (expandedFields.ts, RowRefLeaves): only their roots (the few tables and datasets they
 *   go through) are resolved here, and at most MAX_EXPANDED_REFS other refs (objects).
 *   Those row refs reach scalar leaves of the row only (a path naming a non-empty dict or
 *   list inside the row finds nothing there). Nested columns stay limited to
 *   MAX_EXPANDED_REFS refs.
 * - The answer (`return_expanded_column_values`, default true): each expand column of each
 *   call, shortest first, is replaced by its resolved value; a resolved object gets `_ref`
 *   (the ref it came from) unless it has one. With false the calls keep their ref strings
 *   and only the filter and sort reach inside.
 */

/** Most distinct refs of an expand column resolved here and bound into the query (more: see fieldsFor). */
export const MAX_EXPANDED_REFS = 1000;
/** Most characters of refs and leaf texts bound into one query (ClickHouse parses at most 256 KiB of SQL). */
export const MAX_EXPANDED_CHARS = 100_000;
/** Most expand columns per request. */
export const MAX_EXPAND_COLUMNS = 32;

const REFS_PER_READ = 1000;

type Json = unknown;

export class RefExpander {
  constructor(
    private readonly reads: CallsReadRepository,
    private readonly resolver: RefResolver,
  ) {}

  /** Checks the expand columns (InvalidFieldError for a malformed one) and answers them without repeats. */
  columns(columns: readonly string[] | null | undefined): string[] {
    const unique = [...new Set(columns ?? [])];
    if (unique.length > MAX_EXPAND_COLUMNS) throw new ClientError(400, `at most ${MAX_EXPAND_COLUMNS} expand_columns`);
    return unique.map(checkExpandColumn);
  }

  /** The field set of the paths `query` and `sortBy` name below expand columns; null when they name none. */
  async fieldsFor(projectId: string, columns: readonly string[], query: Query | null | undefined, sortBy: readonly SortBy[] | null | undefined): Promise<FieldSet | null> {
    if (columns.length === 0) return null;
    const paths = new Set([...(query ? fieldPaths(query) : []), ...(sortBy ?? []).map((s) => s.field)]);
    const plans = [...paths].flatMap((path) => {
      const plan = expansionOf(path, columns);
      return plan ? [{ path, ...plan }] : [];
    });
    if (plans.length === 0) return null;

    const ends = new Map<string, Promise<ChainEnd>>();
    const endOf = (chain: readonly string[]) => {
      const key = chain.join("\n");
      if (!ends.has(key)) ends.set(key, this.chainValues(projectId, chain));
      return ends.get(key)!;
    };
    const fields = new Map<string, ExpandedField>();
    let chars = 0;
    for (const { path, chain, leafKeys } of plans) {
      const keys: string[] = [];
      const values: string[] = [];
      const end = await endOf(chain);
      for (const [ref, value] of end.values) {
        const leaf = leafText(valueAt(value, leafKeys));
        if (leaf === undefined) continue;
        keys.push(ref);
        values.push(leaf);
        chars += ref.length + leaf.length;
      }
      const rows = end.rowTables && { projectId, ...end.rowTables, leafPath: [LEAF_ROOT, ...leafKeys].join(".") };
      if (rows) chars += [...rows.roots, ...rows.tables].reduce((n, text) => n + text.length, 0);
      if (chars > MAX_EXPANDED_CHARS) {
        throw new ClientError(400, `the refs at the expand columns and their values at ${path} exceed ${MAX_EXPANDED_CHARS} characters for one query; narrow the query (e.g. filter.call_ids or op_names) or expand fewer fields`);
      }
      fields.set(path, rows ? { column: chain[0]!, keys, values, rows } : { column: chain[0]!, keys, values });
    }
    return expandedFields(fields);
  }

  /** Replaces, in each call, the value of each expand column (shortest first) by what its ref resolves to. */
  async expandCalls(projectId: string, calls: Record<string, Json>[], columns: readonly string[]): Promise<void> {
    const byDepth = [...columns].sort((a, b) => a.split(".").length - b.split(".").length);
    for (const column of byDepth) {
      const keys = column.split(".");
      const found: { call: Record<string, Json>; ref: string }[] = [];
      for (const call of calls) {
        const value = valueAt(call, keys);
        if (typeof value === "string" && expandable(value, projectId)) found.push({ call, ref: value });
      }
      if (found.length === 0) continue;
      const resolved = await this.resolve([...new Set(found.map((f) => f.ref))]);
      for (const { call, ref } of found) {
        if (!resolved.has(ref)) continue;
        const value = structuredClone(resolved.get(ref));
        setAt(call, keys, isPlainObject(value) && !Object.hasOwn(value, "_ref") ? { ...value, _ref: ref } : value);
      }
    }
  }

  /** The values the refs at the outermost column resolve to through the whole chain, by that ref. */
  private async chainValues(projectId: string, chain: readonly string[]): Promise<ChainEnd> {
    const prefix = `weave:///${projectId}/`;
    const found = await this.reads.refsAt(projectId, chain[0]!, prefix, MAX_EXPANDED_REFS);
    // More than that many texts with the prefix: whether all expand or not, they are not all read.
    if (found.length > MAX_EXPANDED_REFS) {
      if (chain.length === 1) return this.manyRefs(projectId, chain[0]!, prefix);
      throw new ClientError(400, `expand column ${chain[0]} holds more than ${MAX_EXPANDED_REFS} distinct refs among the project's calls; a filter or sort through nested expand columns is limited to that many`);
    }
    let current = await this.resolve(found.filter((r) => expandable(r, projectId)));
    for (let i = 1; i < chain.length; i++) {
      const keys = chain[i]!.slice(chain[i - 1]!.length + 1).split(".");
      const nested = new Map<string, string>();
      for (const [root, value] of current) {
        const ref = valueAt(value, keys);
        if (typeof ref === "string" && expandable(ref, projectId)) nested.set(root, ref);
      }
      const resolved = await this.resolve([...new Set(nested.values())]);
      current = new Map([...nested].flatMap(([root, ref]) => (resolved.has(ref) ? [[root, resolved.get(ref)] as const] : [])));
    }
    return { values: current };
  }

  /**
   * A column with more than MAX_EXPANDED_REFS refs: its row refs are left to ClickHouse
   * (their roots resolved to tables here), the others resolved here (at most that many).
   */
  private async manyRefs(projectId: string, column: string, prefix: string): Promise<ChainEnd> {
    const [others, roots] = await Promise.all([
      this.reads.refsAt(projectId, column, prefix, MAX_EXPANDED_REFS, "skip"),
      this.reads.refsAt(projectId, column, prefix, MAX_EXPANDED_REFS, "roots"),
    ]);
    const refs = others.filter((r) => expandable(r, projectId));
    if (others.length > MAX_EXPANDED_REFS || roots.length > MAX_EXPANDED_REFS) {
      const what = others.length > MAX_EXPANDED_REFS ? "refs to objects" : "tables or datasets whose rows it names";
      throw new ClientError(400, `expand column ${column} holds more than ${MAX_EXPANDED_REFS} distinct ${what} among the project's calls; a filter or sort through it is limited to that many`);
    }
    const [values, rowTables] = await Promise.all([this.resolve(refs), this.tablesOfRoots(projectId, roots)]);
    return { values, rowTables };
  }

  /**
   * The table each root of row refs names (the ref before `/id/<row>`): a table ref of the
   * project as written, else what the root resolves to when that is a table ref of the
   * project (a dataset's `attr/rows`). Roots that name no table are left out.
   */
  private async tablesOfRoots(projectId: string, roots: readonly string[]): Promise<{ roots: string[]; tables: string[] }> {
    const out = { roots: [] as string[], tables: [] as string[] };
    const add = (root: string, table: WeaveRef | null) => {
      if (table?.kind !== "table" || table.extra.length > 0 || projectIdOf(table) !== projectId) return;
      out.roots.push(root);
      out.tables.push(table.digest);
    };
    const toRead: string[] = [];
    for (const root of roots) {
      const ref = refOrNull(root);
      if (ref?.kind === "table" && ref.extra.length === 0) add(root, ref);
      else if (ref && ref.kind !== "call" && projectIdOf(ref) === projectId) toRead.push(root);
    }
    const texts = toRead.length > 0 ? await this.resolver.resolveOrNull(toRead) : [];
    toRead.forEach((root, i) => {
      const value = texts[i] === null || texts[i] === undefined ? null : (JSON.parse(texts[i]!) as Json);
      add(root, typeof value === "string" ? refOrNull(value) : null);
    });
    return out;
  }

  /** The parsed values of the refs that resolve. */
  private async resolve(refs: readonly string[]): Promise<Map<string, Json>> {
    const out = new Map<string, Json>();
    for (let i = 0; i < refs.length; i += REFS_PER_READ) {
      const chunk = refs.slice(i, i + REFS_PER_READ);
      const texts = await this.resolver.resolveOrNull(chunk);
      chunk.forEach((ref, j) => {
        const text = texts[j];
        if (text !== null && text !== undefined) out.set(ref, JSON.parse(text) as Json);
      });
    }
    return out;
  }
}

/** Where a chain of expand columns ends: resolved values by outermost ref, and row refs left to ClickHouse. */
interface ChainEnd {
  readonly values: Map<string, Json>;
  readonly rowTables?: { readonly roots: string[]; readonly tables: string[] };
}

function refOrNull(text: string): WeaveRef | null {
  try {
    return parseRef(text);
  } catch (e) {
    if (e instanceof RefParseError) return null;
    throw e;
  }
}

/** Whether `text` is a ref that expands: an object, op or table-row ref of the project. */
function expandable(text: string, projectId: string): boolean {
  if (!text.startsWith("weave:///")) return false;
  try {
    const ref = parseRef(text);
    if (projectIdOf(ref) !== projectId) return false;
    if (ref.kind === "object" || ref.kind === "op") return true;
    return ref.kind === "table" && ref.extra[0]?.edge === "id";
  } catch (e) {
    if (e instanceof RefParseError) return false;
    throw e;
  }
}

/** Every `$getField` path in a query expression (literals are values, not walked). */
function fieldPaths(query: Query): string[] {
  const out: string[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!isPlainObject(node)) return;
    for (const [key, child] of Object.entries(node)) {
      if (key === "$literal") continue;
      if (key === "$getField" && typeof child === "string") out.push(child);
      else visit(child);
    }
  };
  visit(query.$expr);
  return out;
}

function isPlainObject(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value at dotted keys (array elements by index, as store/calls/flatten.ts names them); undefined when absent. */
function valueAt(value: Json, keys: readonly string[]): Json {
  let at = value;
  for (const key of keys) {
    if (Array.isArray(at) && /^\d+$/.test(key)) at = at[Number(key)];
    else if (isPlainObject(at) && Object.hasOwn(at, key)) at = at[key];
    else return undefined;
  }
  return at;
}

function setAt(target: Record<string, Json>, keys: readonly string[], value: Json): void {
  const parent = valueAt(target, keys.slice(0, -1));
  const last = keys[keys.length - 1]!;
  if (Array.isArray(parent) && /^\d+$/.test(last)) parent[Number(last)] = value;
  else if (isPlainObject(parent)) parent[last] = value;
}

/** A value as a leaf text, encoded as store/calls/flatten.ts encodes call leaves (a non-empty container: its JSON text). */
function leafText(value: Json): string | undefined {
  switch (typeof value) {
    case "undefined":
      return undefined;
    case "string":
      return cutLeaf(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return value ? "true" : "false";
  }
  if (value === null) return "null";
  if (Array.isArray(value) && value.length === 0) return "[]";
  if (isPlainObject(value) && Object.keys(value).length === 0) return "{}";
  return cutLeaf(JSON.stringify(value));
}
