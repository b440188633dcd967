import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { andRetainedSince } from "../projects/retention.js";

/**
 * SQL of eval_results. An evaluation's trials are two levels under its root call: the root's
 * children (predict_and_score calls, and others such as summarize, told apart in the service)
 * and their children (the model's call, the scorers' calls):
 * two queries (run in parallel) read the calls of the roots' traces (every call of an SDK
 * evaluation shares its root's trace) from the roots' earliest start on (less a day: clients'
 * clocks): those whose parent is a root, with their inputs and output; and those whose parent
 * is a root's child (`call_index` holds the parent links), with their op names, times, and
 * attributes and summary when they matter.
 */

/** A child may start a little before its parent when the client's clock stepped back. */
const START_MARGIN_MICROS = 24 * 3600 * 1_000_000;

export interface RootRow {
  id: string;
  trace_id: string;
  display_name: string | null;
  started_at: string | number;
  inputs: string;
}

export interface TrialCallRow {
  id: string;
  parent_id: string;
  op_name: string;
  /** 1: a child of a root; 2: a grandchild. */
  level: number;
  started_at: string | number;
  ended_at: string | number | null;
  attributes: string;
  /** Whole inputs of level 1; empty text below. */
  inputs: string;
  output: string | null;
  summary: string | null;
}

/** The evaluations asked for; one past the project's retention (`retainedFrom`) is not found, nor then its trials. */
export function evaluationRootsQuery(projectId: string, ids: readonly string[], retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const list = pb.inStrings(ids);
  return {
    sql: `SELECT id, trace_id, display_name, started_at, inputs FROM calls FINAL
WHERE project_id = ${project} AND id IN ${list}${andRetainedSince("started_at", retainedFrom, pb)}
  AND started_at IN (SELECT started_at FROM call_index WHERE project_id = ${project} AND id IN ${list})
  AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`,
    params: pb.params,
  };
}

/** The roots' children: the trials (predict_and_score calls) and others beside them; inputs and output whole. */
export function trialCallsQuery(projectId: string, roots: readonly RootPlace[]): BuiltQuery {
  const pb = new ParamBuilder();
  const { project, rootIds, where } = treeConditions(projectId, roots, pb);
  return {
    sql: `SELECT id, parent_id, op_name, 1 AS level, started_at, ended_at, '' AS attributes, '' AS summary, inputs, output
FROM calls FINAL
WHERE ${where} AND parent_id IN ${rootIds}
  AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`,
    params: pb.params,
  };
}

/**
 * The trials' children (model and scorer calls): no inputs or output; attributes only when they
 * may mark a score, the summary only when it may hold usage (a substring test is far cheaper
 * than sending and parsing every call's text; the service parses what comes and decides).
 */
export function trialChildrenQuery(projectId: string, roots: readonly RootPlace[]): BuiltQuery {
  const pb = new ParamBuilder();
  const { project, rootIds, where } = treeConditions(projectId, roots, pb);
  return {
    sql: `SELECT id, parent_id, op_name, 2 AS level, started_at, ended_at,
  if(position(attributes, 'score') > 0, attributes, '') AS attributes,
  if(position(summary, 'usage') > 0, summary, '') AS summary,
  '' AS inputs, NULL AS output
FROM calls FINAL
WHERE ${where}
  AND parent_id IN (SELECT id FROM call_index WHERE project_id = ${project} AND parent_id IN ${rootIds})
  AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`,
    params: pb.params,
  };
}

export interface RootPlace {
  readonly id: string;
  readonly trace_id: string;
  readonly started_at: number;
}

function treeConditions(projectId: string, roots: readonly RootPlace[], pb: ParamBuilder) {
  const project = pb.str(projectId);
  const rootIds = pb.inStrings(roots.map((r) => r.id));
  const traces = pb.inStrings([...new Set(roots.map((r) => r.trace_id))]);
  const from = pb.int(Math.min(...roots.map((r) => r.started_at)) - START_MARGIN_MICROS);
  return { project, rootIds, where: `project_id = ${project} AND started_at >= ${from} AND trace_id IN ${traces}` };
}

/** Table rows by digest (dataset rows that trials name by ref). */
export function rowValuesQuery(projectId: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT digest, any(val) AS val FROM table_rows WHERE project_id = ${pb.str(projectId)} AND digest IN ${pb.inStrings(digests)} GROUP BY digest`,
    params: pb.params,
  };
}
