import type { Migration } from "../migrations.js";

/**
 * Tables of annotation queues. Times are µs since the epoch (server time).
 *
 * `annotation_queues`: one row per version of a queue (ReplacingMergeTree(version), keyed
 * (project_id, id)); an update or a soft delete writes the whole queue again with a higher
 * version, `deleted_at` set for a delete. Reads use FINAL.
 */
export const ANNOTATION_QUEUES_MIGRATION: Migration = {
  version: 40,
  name: "annotation_queues",
  statements: [
    `CREATE TABLE IF NOT EXISTS annotation_queues (
      project_id String,
      id String,
      name String,
      description String,
      scorer_refs Array(String),
      created_at Int64,
      created_by String,
      updated_at Int64,
      deleted_at Nullable(Int64),
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, id)`,
  ],
};

/**
 * `annotation_queue_items`: one row per item, never changed (an item's annotation state lives
 * in `annotation_progress`), stored in queue order: `position` grows in the order items were
 * added (the service's monotonic clock, one tick per item), so a page in queue order reads only
 * its granules, and an item's place in the queue is its rank by (position, id). The call's
 * fields are copied at add time.
 */
export const ANNOTATION_QUEUE_ITEMS_MIGRATION: Migration = {
  version: 41,
  name: "annotation_queue_items",
  statements: [
    `CREATE TABLE IF NOT EXISTS annotation_queue_items (
      project_id String,
      queue_id String,
      position Int64,
      id String,
      call_id String,
      call_started_at Int64,
      call_ended_at Nullable(Int64),
      call_op_name String,
      call_trace_id String,
      display_fields Array(String),
      added_by Nullable(String),
      created_at Int64,
      created_by String
    ) ENGINE = MergeTree
    ORDER BY (project_id, queue_id, position, id)`,
  ],
};

/**
 * `annotation_progress`: each annotator's state of each item, one row per version
 * (ReplacingMergeTree(version) keyed (project_id, queue_id, item_id, annotator_id)): a
 * transition writes a new version, FINAL keeps the newest. An item without a row for an
 * annotator is, for them, not started.
 */
export const ANNOTATION_PROGRESS_MIGRATION: Migration = {
  version: 42,
  name: "annotation_progress",
  statements: [
    `CREATE TABLE IF NOT EXISTS annotation_progress (
      project_id String,
      queue_id String,
      item_id String,
      annotator_id String,
      annotation_state String,
      created_at Int64,
      updated_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (project_id, queue_id, item_id, annotator_id)`,
  ],
};

export const ANNOTATION_MIGRATIONS: readonly Migration[] = [ANNOTATION_QUEUES_MIGRATION, ANNOTATION_QUEUE_ITEMS_MIGRATION, ANNOTATION_PROGRESS_MIGRATION];
