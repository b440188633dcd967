import type { Migration } from "../migrations.js";

/**
 * Tables of the feedback module.
 *
 * `feedback` holds one row per version of a feedback; a feedback is never edited, only
 * created and deleted (`/feedback/replace` deletes one and creates another). Deletion
 * writes a tombstone: the same key (project_id, id) with `deleted = 1` and a higher
 * `version`. Every read uses FINAL and `deleted = 0`, so a purged or replaced feedback is
 * gone from the first read after the request, whether or not ClickHouse has merged the
 * parts yet (FINAL collapses the versions before WHERE sees them; PREWHERE never moves a
 * non-key condition ahead of FINAL). Without PARTITION BY every insert is one part, so the
 * rows of one request (a batch, or a replace's tombstone and its new row) appear at once.
 *
 * - `call_id`: the call that `weave_ref` names when it is `weave:///<project_id>/call/<id>`,
 *   else '' (derived at write time, so call lookups need no ref parsing in SQL).
 * - `payload`: the payload's JSON text; `payload_paths`/`payload_values`: its leaves
 *   flattened as calls flatten their JSON (see store/calls/flatten.ts), rooted at `payload`, so
 *   filters, sorts and statistics read leaves without JSON functions (18.16 has none).
 * - `created_at`: µs since the epoch, server time at creation.
 */
export const FEEDBACK_MIGRATION: Migration = {
  version: 4,
  name: "feedback",
  statements: [
    `CREATE TABLE IF NOT EXISTS feedback (
      project_id String,
      id String,
      weave_ref String,
      call_id String,
      feedback_type String,
      payload String,
      payload_paths Array(String),
      payload_values Array(String),
      creator Nullable(String),
      annotation_ref Nullable(String),
      runnable_ref Nullable(String),
      call_ref Nullable(String),
      trigger_ref Nullable(String),
      queue_id Nullable(String),
      wb_user_id String,
      created_at Int64,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, id)`,
  ],
};
