import type { Migration } from "../migrations.js";

/**
 * Tables of the threads module. The worker keeps both (services/worker/threadAggregates.ts):
 *
 * - `thread_turns`: one row per version of a turn call (`id == turn_id`, non-empty
 *   `thread_id`), keyed by (project, thread, turn) so a thread's turns are one key range.
 *   ReplacingMergeTree keeps the highest version, and the version ranks a deleted turn above
 *   a finished one above an unfinished one (see threadRows.ts): redelivery and repeated
 *   snapshots replace a turn's row instead of adding one, a late unfinished snapshot never
 *   hides an end, and nothing un-deletes a turn.
 * - `threads`: one row per version of a thread's figures, recomputed exactly from the
 *   thread's `thread_turns` rows (read with FINAL) after every batch that touched it. The
 *   version is the sum of the versions of the turn rows it was computed from: it grows with
 *   every change a later read can see and stays equal only for equal inputs, so the newest
 *   computation wins whatever the workers' clocks say (see threadsWrite.ts). A thread whose
 *   turns were all deleted keeps a row with `turn_count = 0`, which reads skip.
 *
 * Small granules: a worker's recompute reads only the touched threads' turns (1,024-row
 * granules, so touching a few threads of many reads a few granules), and a windowed page
 * reads only its candidate threads (256-row granules, see threadsQuery.ts).
 */
export const THREADS_MIGRATION: Migration = {
  version: 2,
  name: "threads",
  statements: [
    `CREATE TABLE IF NOT EXISTS thread_turns (
      project_id String,
      thread_id String,
      turn_id String,
      started_at Int64,
      ended_at Int64,
      finished UInt8,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, thread_id, turn_id)
    SETTINGS index_granularity = 1024`,
    `CREATE TABLE IF NOT EXISTS threads (
      project_id String,
      thread_id String,
      turn_count UInt64,
      finished_count UInt64,
      start_time Int64,
      last_updated Int64,
      first_turn_id String,
      last_turn_id String,
      p50_turn_duration_ms Nullable(Float64),
      p99_turn_duration_ms Nullable(Float64),
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, thread_id)
    SETTINGS index_granularity = 256`,
  ],
};
