import type { Migration } from "../migrations.js";

/**
 * `request_retries`: the answer of each applied request of a `recorded` operation that carried
 * an `X-Weave-Retry-Id` (http/retries.ts), read when a repeat of it reaches a process that
 * does not remember it. `project_id` holds the projects the request named, sorted, one per
 * line. Rows are only useful for the minutes a client keeps retrying; ClickHouse 18.16 has no
 * TTL, so old months are dropped by hand (`ALTER TABLE request_retries DROP PARTITION 202611`).
 */
export const RETRIES_MIGRATION: Migration = {
  version: 16,
  name: "request_retries",
  statements: [
    `CREATE TABLE IF NOT EXISTS request_retries (
      project_id String,
      retry_id String,
      route String,
      answer String,
      created_at Int64
    ) ENGINE = MergeTree()
    PARTITION BY toYYYYMM(toDateTime(intDiv(created_at, 1000000)))
    ORDER BY (project_id, retry_id, route)`,
  ],
};
