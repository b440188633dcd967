import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { TurnRank, turnVersion } from "./threadRows.js";

/** Percentile levels of the two duration figures, in quantilesExact's order. */
export const PERCENTILES = [0.5, 0.99] as const;

/**
 * Recomputes the figures of some threads (all of the project's when `threadIds` is null)
 * from their turn rows and appends them as new versions of their `threads` rows, all inside
 * ClickHouse (INSERT ... SELECT: no turn travels to the worker).
 *
 * Plan: the primary key of `thread_turns` (project_id, thread_id, turn_id) narrows the read
 * to the named threads' key ranges; FINAL keeps each turn's newest row (deleted beats
 * finished beats running); conditions on `deleted`/`finished` go into -If combinators rather
 * than WHERE so that they apply to the collapsed rows and a thread whose turns were all
 * deleted still gets a row (turn_count 0) that hides its older figures.
 *
 * Figures, over the live (not deleted) turns:
 * - turn_count: all of them, running ones included; start_time: their earliest start;
 *   first_turn_id: the earliest-started (ties: the smallest turn id);
 * - last_updated: the latest end of a finished turn, or, while none has finished, the latest
 *   start; last_turn_id: the turn that gave last_updated (ties: the largest turn id);
 * - p50/p99: quantilesExact over the finished turns' durations in ms, (ended_at -
 *   started_at) / 1000 with microsecond precision: with the n durations sorted ascending,
 *   the element at 0-based index floor(q * n). No interpolation, exact at every thread size
 *   (quantileExact keeps every value: 8 bytes per turn while the thread is computed). NULL
 *   when no turn has finished.
 * - version: the sum of the versions of all the thread's turn rows (deleted ones included).
 *   Each turn row's version only grows and a later read sees every row an earlier read saw,
 *   so a later read of a changed thread always has a larger sum, and equal sums mean equal
 *   inputs: the freshest computation wins in `threads` FINAL whatever order concurrent
 *   workers insert in. Exact in UInt64 while a thread has fewer than 2^20 turn rows.
 */
export function recomputeThreadsQuery(projectId: string, threadIds: readonly string[] | null): BuiltQuery {
  const pb = new ParamBuilder();
  const where = [`project_id = ${pb.str(projectId)}`];
  if (threadIds !== null) where.push(`thread_id IN ${pb.inStrings(threadIds)}`);
  const live = "deleted = 0";
  const done = "deleted = 0 AND finished = 1";
  // Parameters of an aggregate function must be literals; these are constants of the code.
  const levels = PERCENTILES.map((q) => String(q)).join(", ");
  return {
    sql: `INSERT INTO threads (project_id, thread_id, turn_count, finished_count, start_time, last_updated,
  first_turn_id, last_turn_id, p50_turn_duration_ms, p99_turn_duration_ms, version)
SELECT project_id, thread_id, live_turns, done_turns, first_start, last_activity, first_turn, last_turn,
  if(done_turns > 0, durations[1], NULL), if(done_turns > 0, durations[2], NULL), thread_version
FROM (
SELECT
  project_id,
  thread_id,
  countIf(${live}) AS live_turns,
  countIf(${done}) AS done_turns,
  minIf(started_at, ${live}) AS first_start,
  if(done_turns > 0, maxIf(ended_at, ${done}), maxIf(started_at, ${live})) AS last_activity,
  argMinIf(turn_id, (started_at, turn_id), ${live}) AS first_turn,
  if(done_turns > 0, argMaxIf(turn_id, (ended_at, turn_id), ${done}), argMaxIf(turn_id, (started_at, turn_id), ${live})) AS last_turn,
  quantilesExactIf(${levels})((ended_at - started_at) / 1000, ${done}) AS durations,
  sum(version) AS thread_version
FROM thread_turns FINAL
WHERE ${where.join(" AND ")}
GROUP BY project_id, thread_id
)`,
    params: pb.params,
  };
}

/**
 * The turn calls among some deleted call ids, found through the call index (no scan of the
 * project), with the thread each belongs to. The output names differ from every column on
 * purpose: in ClickHouse an alias shadows a column of the same name in WHERE too.
 */
export function deletedTurnsQuery(projectId: string, ids: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const idList = pb.inStrings(ids);
  return {
    sql: `SELECT DISTINCT id AS deleted_turn_id, assumeNotNull(thread_id) AS deleted_thread_id, started_at AS deleted_started_at
FROM calls
WHERE project_id = ${project}
  AND started_at IN (SELECT started_at FROM call_index WHERE project_id = ${project} AND id IN ${idList})
  AND id IN ${idList}
  AND turn_id = id
  AND thread_id != ''`,
    params: pb.params,
  };
}

/**
 * Backfill: writes the `thread_turns` row of every turn call of a project straight from
 * `calls` (the same rows the worker writes for them, deleted ones flagged from
 * `call_deletions`), for data stored before the threads tables existed. Follow it with
 * `recomputeThreadsQuery(projectId, null)`.
 */
export function rebuildTurnsQuery(projectId: string, nowMs: number): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const running = pb.int(turnVersion(TurnRank.running, nowMs));
  const finished = pb.int(turnVersion(TurnRank.finished, nowMs));
  const deleted = pb.int(turnVersion(TurnRank.deleted, nowMs));
  return {
    sql: `INSERT INTO thread_turns (project_id, thread_id, turn_id, started_at, ended_at, finished, deleted, version)
SELECT project_id, assumeNotNull(thread_id), id, started_at, ifNull(ended_at, toInt64(0)), ended_at IS NOT NULL AS is_finished,
  id IN (SELECT id FROM call_deletions WHERE project_id = ${project}) AS is_deleted,
  toUInt64(multiIf(is_deleted, ${deleted}, is_finished, ${finished}, ${running}))
FROM calls FINAL
WHERE project_id = ${project} AND turn_id = id AND thread_id != ''`,
    params: pb.params,
  };
}
