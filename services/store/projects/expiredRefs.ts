import type { ClickHouseStore } from "../clickhouse.js";
import { MAX_LEAVES } from "../calls/flatten.js";
import { idChunks, ParamBuilder } from "../sql.js";

/**
 * The one rule for what a project's retention removes besides its calls: an object version, a
 * table or a file of the project is expired when an expired call references it (directly, or
 * through the objects it references: a Dataset object → its table, an Op → its code file)
 * while no retained call, and no object version that is kept, references it. What no call ever
 * referenced is kept (a dataset published by hand stays).
 *
 * Everything is named by a target key: `object/<object_id>:<digest>` (an op is an object),
 * `table/<digest>`, `file/<digest>`. The edges are found in ClickHouse:
 * - calls → targets: `call_ref_bounds` (schema.ts), filled by the worker as it writes calls
 *   (store/calls/refTargets.ts) from the leaves it flattens (`json_values`: refs
 *   `weave:///<project>/object|op|table/...` of the same project; digests under a `files` key,
 *   as the Weave clients write images and op code inline) and `op_name`; ReplacingMergeTree on
 *   (project_id, target) keeping the newest `started_at`, so a target's newest referencing call
 *   is one small read;
 * - objects → targets: read from the objects' JSON text (refs in it, and the digests of its
 *   `files` map) when the job runs;
 * - rows of tables → targets: the same leaves as calls' (`table_row_leaves`); a target a table
 *   row references is kept, whether or not the table is expired (not followed further).
 */

const SCHEME_LIKE = "'weave:///%'";
const FILES_PATH_LIKE = "'%.files.%'";

/** The `i`th `/`-separated part of a ref (1-based: `weave:`, '', '', entity, project, kind, id). */
const refPart = (ref: string, i: number): string => `splitByChar('/', ${ref})[${i}]`;

/** The target key a ref names (its id decoded; an op is an object). */
const refTarget = (ref: string): string =>
  `concat(if(${refPart(ref, 6)} = 'op', 'object', ${refPart(ref, 6)}), '/', decodeURLComponent(${refPart(ref, 7)}))`;

/** Whether a ref (a string known to start with the scheme) names an object, op or table of the project `project` (an SQL expression). */
const isProjectRef = (ref: string, project: string): string =>
  `${refPart(ref, 6)} IN ('object', 'op', 'table') AND concat(${refPart(ref, 4)}, '/', ${refPart(ref, 5)}) = ${project}`;

/**
 * The targets of the project's refs among `strings` (an array). The strings that are refs at
 * all are kept first, so that only those are split: `AND` in a lambda evaluates every operand
 * for every element (ClickHouse before 21.9), and most strings (leaves) are no ref.
 */
const refTargets = (strings: string, project: string): string =>
  `arrayMap(r -> ${refTarget("r")}, arrayFilter(r -> ${isProjectRef("r", project)}, arrayFilter(r -> r LIKE ${SCHEME_LIKE}, ${strings})))`;

/** The targets among flattened leaves (parallel arrays of values and paths): refs of the project, and file digests. */
export const leafTargets = (values: string, paths: string, project: string): string =>
  `arrayConcat(
      ${refTargets(values, project)},
      arrayMap(v -> concat('file/', v), arrayFilter((v, p) -> p LIKE ${FILES_PATH_LIKE}, ${values}, ${paths})))`;

/** The targets an object's JSON text references: its refs of the project, and the digests of its `files` maps. */
export const objectTargets = (val: string, project: string): string =>
  `arrayConcat(
      ${refTargets(`extractAll(${val}, 'weave:///[^"]*')`, project)},
      arrayMap(d -> concat('file/', d), arrayReduce('groupArrayArray', arrayMap(b -> extractAll(b, ':\\\\s*"([^"]*)"'), extractAll(${val}, '"files":\\\\s*\\\\{[^{}]*\\\\}')))))`;

/** The target key of a row of `objects`, `tables` and `files`. */
export const objectKey = "concat('object/', object_id, ':', digest)";
export const tableKey = (digest = "digest"): string => `concat('table/', ${digest})`;
export const fileKey = "concat('file/', digest)";

/**
 * Whether a call's leaves may not show all its refs: the leaf budget ran out, or a leaf holds
 * a ref inside other text (an object past the depth bound is one leaf of JSON text).
 */
const LEAVES_MAY_MISS_REFS = `(length(json_paths) >= ${MAX_LEAVES} OR arrayExists(v -> position(v, 'weave:///') > 1, json_values))`;

/** The call's JSON parts as one text, for the refs the leaves may miss. */
const CALL_JSON_TEXT = "concat(attributes, inputs, ifNull(output, ''), ifNull(summary, ''))";

/**
 * The `call_ref_bounds` rows of stored `calls` rows, in SQL: migration 46's backfill (and the
 * view of migrations 46 and 47); the worker applies the same rule to the rows it writes
 * (store/calls/refTargets.ts, held to this by test/calls/refTargets.test.ts). The targets of the
 * leaves and `op_name`, and, only when the leaves may miss some, those the JSON text names.
 * The condition picks the text searched, not the result: `if` evaluates both of its branches
 * for every row (ClickHouse before 21.9), so the regular expressions run on an empty text for most rows.
 */
export const CALL_REF_BOUNDS_SELECT = `SELECT project_id, target, started_at FROM calls
    ARRAY JOIN arrayConcat(
      ${refTargets("[op_name]", "project_id")},
      ${leafTargets("json_values", "json_paths", "project_id")},
      ${objectTargets(`if(${LEAVES_MAY_MISS_REFS}, ${CALL_JSON_TEXT}, '')`, "project_id")}) AS target`;

/**
 * A project's expired targets at `cutoff` (µs), found in the project's call refs and objects.
 * Memory: the project's object → target edges (a few per object version) and the targets its
 * calls reference while it runs.
 */
export class ExpiredRefs {
  constructor(private readonly store: ClickHouseStore) {}

  async of(projectId: string, cutoff: number): Promise<string[]> {
    const { olderOnly, retained } = await this.callTargets(projectId, cutoff);
    if (olderOnly.length === 0) return [];
    const edges = await this.objectEdges(projectId);
    const reached = closure(olderOnly, edges);
    const keptSeeds = new Set([...edges.keys()].filter((source) => !reached.has(source)));
    for (const target of reached) if (retained.has(target)) keptSeeds.add(target);
    for (const target of await this.referencedByTableRows(projectId, [...reached])) keptSeeds.add(target);
    const kept = closure([...keptSeeds], edges);
    return [...reached].filter((target) => !kept.has(target)).sort();
  }

  /** The targets the project's calls reference: those only calls before the cutoff do, and those a call from the cutoff on does. */
  private async callTargets(projectId: string, cutoff: number): Promise<{ olderOnly: string[]; retained: Set<string> }> {
    const pb = new ParamBuilder();
    const rows = await this.store.rows<{ target: string; retained: number }>("expired_refs_call_targets", {
      sql: `SELECT target, max(started_at) >= ${pb.int(cutoff)} AS retained FROM call_ref_bounds WHERE project_id = ${pb.str(projectId)} GROUP BY target`,
      params: pb.params,
    });
    return { olderOnly: rows.filter((r) => Number(r.retained) === 0).map((r) => r.target), retained: new Set(rows.filter((r) => Number(r.retained) !== 0).map((r) => r.target)) };
  }

  /** Each object version of the project (key) and the targets its value references. */
  private async objectEdges(projectId: string): Promise<Map<string, Set<string>>> {
    const pb = new ParamBuilder();
    const project = pb.str(projectId);
    const edges = new Map<string, Set<string>>();
    const sql = `SELECT DISTINCT ${objectKey} AS source, target FROM objects
      LEFT ARRAY JOIN ${objectTargets("val", project)} AS target
      WHERE project_id = ${project}`;
    for await (const row of this.store.stream<{ source: string; target: string }>("expired_refs_object_edges", { sql, params: pb.params })) {
      const out = edges.get(row.source) ?? new Set<string>();
      if (row.target !== "") out.add(row.target);
      edges.set(row.source, out);
    }
    return edges;
  }

  /** Which of `targets` a row of a table references. */
  private async referencedByTableRows(projectId: string, targets: readonly string[]): Promise<string[]> {
    const found: string[] = [];
    for (const chunk of idChunks(targets)) {
      const pb = new ParamBuilder();
      const project = pb.str(projectId);
      const wanted = pb.inStrings(chunk);
      const rows = await this.store.rows<{ target: string }>("expired_refs_table_rows", {
        sql: `SELECT DISTINCT target FROM table_row_leaves
            ARRAY JOIN ${leafTargets("[value]", "[path]", project)} AS target
            WHERE project_id = ${project} AND (value LIKE ${SCHEME_LIKE} OR path LIKE ${FILES_PATH_LIKE}) AND target IN ${wanted}`,
        params: pb.params,
      });
      found.push(...rows.map((r) => r.target));
    }
    return found;
  }
}

/** `from` and every target reachable from it through the edges. */
function closure(from: readonly string[], edges: ReadonlyMap<string, ReadonlySet<string>>): Set<string> {
  const seen = new Set(from);
  const pending = [...from];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    for (const target of edges.get(next) ?? []) {
      if (seen.has(target)) continue;
      seen.add(target);
      pending.push(target);
    }
  }
  return seen;
}
