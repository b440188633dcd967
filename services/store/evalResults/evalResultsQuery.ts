import { ParamBuilder, type BuiltQuery } from "../sql.js";

/**
 * SQL of eval_results. An evaluation's trials are two levels under its root call: the root's
 * children (predict_and_score calls, and others such as summarize, told apart in the service)
 * and their children (the model's call, the scorers' calls). One query reads both levels:
 * the calls of the roots' traces (every call of an SDK evaluation shares its root's trace) from
 * the roots' earliest start on (less a day: clients' clocks), whose parent is a root or a
 * root's child (`call_index` holds the parent links). Only the first level's inputs and output
 * are read whole; of the second level its `inputs.self` (a model call names its model there),
 * attributes, summary and times.
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
  /** `inputs.self` as flattened (text), empty when absent. */
  input_self: string;
  output: string | null;
  summary: string | null;
}

export function evaluationRootsQuery(projectId: string, ids: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const list = pb.inStrings(ids);
  return {
    sql: `SELECT id, trace_id, display_name, started_at, inputs FROM calls FINAL
WHERE project_id = ${project} AND id IN ${list}
  AND started_at IN (SELECT started_at FROM call_index WHERE project_id = ${project} AND id IN ${list})
  AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`,
    params: pb.params,
  };
}

export function trialCallsQuery(projectId: string, roots: readonly { id: string; trace_id: string; started_at: number }[]): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const rootIds = pb.inStrings(roots.map((r) => r.id));
  const traces = pb.inStrings([...new Set(roots.map((r) => r.trace_id))]);
  const from = pb.int(Math.min(...roots.map((r) => r.started_at)) - START_MARGIN_MICROS);
  return {
    sql: `SELECT id, parent_id, op_name, level, started_at, ended_at, attributes, summary,
  if(level = 1, inputs, '') AS inputs,
  if(level = 1, output, NULL) AS output,
  json_values[indexOf(json_paths, 'inputs.self')] AS input_self
FROM (
  SELECT *, if(parent_id IN ${rootIds}, 1, 2) AS level FROM calls FINAL
  WHERE project_id = ${project} AND started_at >= ${from} AND trace_id IN ${traces}
    AND (parent_id IN ${rootIds}
      OR parent_id IN (SELECT id FROM call_index WHERE project_id = ${project} AND parent_id IN ${rootIds}))
    AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})
) AS trial_calls`,
    params: pb.params,
  };
}

/** Table rows by digest (dataset rows that trials name by ref). */
export function rowValuesQuery(projectId: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT digest, any(val) AS val FROM table_rows WHERE project_id = ${pb.str(projectId)} AND digest IN ${pb.inStrings(digests)} GROUP BY digest`,
    params: pb.params,
  };
}
