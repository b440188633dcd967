import type { Migration } from "../migrations.js";

/**
 * Tables of the alerts module (docs/resources.md, "Alerts").
 *
 * `alerts`: one row per version of a rule, ReplacingMergeTree on (project_id, id) by
 * `version`; deleting writes a newer row with `deleted = 1`; every read uses FINAL.
 * `op_names` is a JSON array's text ('' when the rule names none).
 *
 * `alert_transitions`: the rule's state changes, one row per change, numbered from 1 by
 * `seq`. States alternate from `ok` (no change yet), so an odd `seq` is a change into
 * `firing` and an even one back to `ok`: two workers that see the same crossing write the
 * same (project_id, alert_id, seq) and FINAL keeps one row: the one seen first (`rank` =
 * 2^53 − 1 − `at`, the highest rank wins), which the webhook delivery posts too. The rule's
 * state is the one of its highest `seq`; the delivery of a change is one job whose id derives from it.
 *
 * `alert_evaluations`: the last evaluation of each rule (value, NULL when there was no data,
 * and when), ReplacingMergeTree by `evaluated_at`.
 */
export const ALERTS_MIGRATION: Migration = {
  version: 48,
  name: "alerts",
  statements: [
    `CREATE TABLE IF NOT EXISTS alerts (
      project_id String,
      id String,
      name String,
      metric String,
      window_minutes UInt32,
      comparison String,
      threshold Float64,
      op_names String,
      monitor_ref Nullable(String),
      scorer Nullable(String),
      webhook_url String,
      created_at Int64,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, id)`,
    `CREATE TABLE IF NOT EXISTS alert_transitions (
      project_id String,
      alert_id String,
      seq UInt64,
      state String,
      value Nullable(Float64),
      at Int64,
      rank UInt64
    ) ENGINE = ReplacingMergeTree(rank)
    ORDER BY (project_id, alert_id, seq)`,
    `CREATE TABLE IF NOT EXISTS alert_evaluations (
      project_id String,
      alert_id String,
      value Nullable(Float64),
      evaluated_at Int64
    ) ENGINE = ReplacingMergeTree(evaluated_at)
    ORDER BY (project_id, alert_id)`,
  ],
};
