import type { Migration } from "../migrations.js";

/**
 * OTLP log records of spans (ingest: /otel/v1/logs; the worker writes them). Keyed by project
 * and span, so a call's records are one key range, read at read time beside the call (a
 * record may arrive before or after its span). `record_key` is a digest of the record's
 * content: a redelivered record replaces itself (ReplacingMergeTree, read with FINAL).
 * `body` and `attributes` are JSON text; `position` is the record's place in its export, which
 * orders records of one microsecond as they were sent.
 */
export const OTEL_LOGS_MIGRATION: Migration = {
  version: 43,
  name: "otel_log_records",
  statements: [
    `CREATE TABLE IF NOT EXISTS otel_log_records (
      project_id String,
      span_id String,
      record_key String,
      trace_id String,
      time Int64,
      position UInt32,
      event_name String,
      severity_number Int32,
      severity_text String,
      body String,
      attributes String,
      scope_name String
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, span_id, record_key)`,
  ],
};
