import type { Migration } from "../migrations.js";

/**
 * Tables of the jobs module (worker/jobs/runner.ts runs them).
 *
 * `jobs` holds one row per state of a job; a state change writes a whole new row with a
 * higher `version` and every read uses FINAL. The version is `step * 65536 + salt`: each
 * change takes the next step; the random salt decides between two runners that claim on
 * the same step (store/jobs/claims.ts has the argument). The row a job is recorded with
 * (status `queued`, version 0) is derived from its queue message alone, so recording it
 * again (a redelivered message, or the submitter and the consumer both) changes nothing,
 * and it never hides a later state.
 *
 * - `status`: queued | running | completed | failed.
 * - `attempt`: the number (from 1) of the attempt running, or to run next.
 * - `not_before`: µs; a queued job waits until then (backoff after a retryable failure).
 * - `claim_id`, `runner_id`, `claimed_at`: the claim of the runner running it ('' / 0 when none).
 * - `output`: the output's JSON text once completed, else ''; `error`: the last failure's message.
 *
 * `job_heartbeats`: the latest sign of life of the runner running a job (FINAL or max()).
 * A running job whose last sign (heartbeat or claim) is older than the lease is claimable.
 *
 * `job_events`: what a job reported while it ran, in `seq` order (from 1), each with a
 * UUID `id` that clients page with (`after`). Rewriting an event with the same
 * (job_id, seq), as a retried insert does, leaves one.
 */
export const JOBS_MIGRATION: Migration = {
  version: 5,
  name: "jobs",
  statements: [
    `CREATE TABLE IF NOT EXISTS jobs (
      id String,
      type String,
      serial_key String,
      input String,
      submitted_at Int64,
      status String,
      attempt UInt32,
      not_before Int64,
      claim_id String,
      runner_id String,
      claimed_at Int64,
      output String,
      error String,
      finished_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS job_heartbeats (
      job_id String,
      claim_id String,
      beat_at Int64
    ) ENGINE = ReplacingMergeTree(beat_at)
    ORDER BY job_id`,
    `CREATE TABLE IF NOT EXISTS job_events (
      job_id String,
      seq UInt64,
      id String,
      type String,
      data String,
      at Int64
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (job_id, seq)`,
  ],
};
