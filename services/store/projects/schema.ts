import type { Migration } from "../migrations.js";
import { CALL_REF_BOUNDS_SELECT } from "./expiredRefs.js";

/**
 * `projects`: one row per project (`entity/name`), written by the GraphQL `UpsertModel`
 * (the Weave Python SDK's `weave.init` creates its project so) and by the first write of
 * calls to a project (the worker). ReplacingMergeTree on (entity, name): writing a project
 * again is harmless; the latest description wins. Projects that held calls before this
 * table existed are copied from `project_call_bounds` once.
 */
export const PROJECTS_MIGRATION: Migration = {
  version: 20,
  name: "projects",
  statements: [
    `CREATE TABLE IF NOT EXISTS projects (
      entity String,
      name String,
      description Nullable(String),
      created_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (entity, name)`,
    `INSERT INTO projects (entity, name, description, created_at, version)
     SELECT substring(project_id, 1, position(project_id, '/') - 1), substring(project_id, position(project_id, '/') + 1), NULL, 0, 0
     FROM (SELECT DISTINCT project_id FROM project_call_bounds WHERE position(project_id, '/') > 0)`,
  ],
};

/**
 * `project_settings`: one row per version of a project's settings (`project_id` =
 * `entity/name`), the latest `version` wins. `retention_days` NULL: the server's default
 * (`RETENTION_DAYS`) applies.
 */
export const PROJECT_SETTINGS_MIGRATION: Migration = {
  version: 45,
  name: "project_settings",
  statements: [
    `CREATE TABLE IF NOT EXISTS project_settings (
      project_id String,
      retention_days Nullable(UInt32),
      updated_at Int64,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY project_id`,
  ],
};

/**
 * `call_ref_bounds`: per project and target (an object version, table or file its calls
 * reference: expiredRefs.ts), the newest `started_at` of a call that references it
 * (ReplacingMergeTree(started_at): a merge keeps the newest; reads take `max`). The view
 * fills it at every insert into `calls`; the INSERT ... SELECT from the calls stored before.
 * The retention job reads which targets only calls past a project's cutoff reference.
 */
export const CALL_REF_BOUNDS_MIGRATION: Migration = {
  version: 46,
  name: "call_ref_bounds",
  statements: [
    `CREATE TABLE IF NOT EXISTS call_ref_bounds (
      project_id String,
      target String,
      started_at Int64
    ) ENGINE = ReplacingMergeTree(started_at)
    ORDER BY (project_id, target)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS call_ref_bounds_writer TO call_ref_bounds AS ${CALL_REF_BOUNDS_SELECT}`,
    `INSERT INTO call_ref_bounds (project_id, target, started_at) ${CALL_REF_BOUNDS_SELECT}`,
  ],
};

/**
 * The view filling `call_ref_bounds` made again with the cheaper SELECT of the same targets
 * (expiredRefs.ts): the new one first, then the old one dropped, so that no insert into
 * `calls` between the two is missed (one seen by both writes the same rows twice, which the
 * table's reads and merges take as one).
 */
export const CALL_REF_BOUNDS_VIEW_MIGRATION: Migration = {
  version: 47,
  name: "call_ref_bounds_from_calls",
  statements: [
    `CREATE MATERIALIZED VIEW IF NOT EXISTS call_ref_bounds_from_calls TO call_ref_bounds AS ${CALL_REF_BOUNDS_SELECT}`,
    "DROP TABLE IF EXISTS call_ref_bounds_writer",
  ],
};

/**
 * The worker fills `call_ref_bounds` as it writes calls (store/calls/refTargets.ts: the same rule,
 * only for rows that reference something, a row per target of a batch); the view that applied
 * it to every inserted row is dropped. Workers of an earlier version write no rows of their
 * own: upgrade every worker together (docs/operations.md, "Upgrades").
 */
export const CALL_REF_BOUNDS_BY_WORKER_MIGRATION: Migration = {
  version: 50,
  name: "call_ref_bounds_by_worker",
  statements: ["DROP TABLE IF EXISTS call_ref_bounds_from_calls"],
};
