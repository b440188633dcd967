import type { Migration } from "../migrations.js";

/**
 * Tables of the training API (services/training/).
 *
 * `training_models`: one row per state of a model; a change (the delete) writes the whole
 * row again with a higher `version`; reads use FINAL. `run_id` '' is none.
 *
 * `training_checkpoints`: one row per state of a checkpoint, ordered by (model_id, step), so
 * "the latest live checkpoint of a model" (ART asks for it before and after every step) reads
 * one primary-key range. `weights_digest` names the weights, a file of the model's project
 * (store/files); `job_id` the training job that made it ('' for step 0), so that a job run
 * again after a crash finds the checkpoint it wrote. `metrics` is a JSON object of numbers.
 *
 * `training_trajectory_logs`: trajectory groups logged to a model (`POST …/log`), as JSON,
 * with their reward summary.
 */
export const TRAINING_MIGRATION: Migration = {
  version: 30,
  name: "training",
  statements: [
    `CREATE TABLE IF NOT EXISTS training_models (
      id String,
      entity String,
      project String,
      name String,
      base_model String,
      run_id String,
      created_at Int64,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS training_checkpoints (
      model_id String,
      step UInt32,
      id String,
      metrics String,
      weights_digest String,
      job_id String,
      created_at Int64,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY (model_id, step)`,
    `CREATE TABLE IF NOT EXISTS training_trajectory_logs (
      model_id String,
      id String,
      split String,
      groups String,
      metrics String,
      created_at Int64
    ) ENGINE = MergeTree()
    ORDER BY (model_id, created_at, id)`,
  ],
};
