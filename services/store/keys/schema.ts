import type { Migration } from "../migrations.js";

/**
 * `api_keys`: the keys made over the API (`/admin/keys`), one row per key and version:
 * ReplacingMergeTree on `id` by `version`, so a revocation is a newer row with `deleted = 1`
 * (read with FINAL). Only the SHA-256 of the secret is kept. `api_key_uses`: when each key was
 * last used, written in batches at most once a minute per key (auth/keySync.ts).
 */
export const KEYS_MIGRATION: Migration = {
  version: 44,
  name: "api_keys",
  statements: [
    `CREATE TABLE IF NOT EXISTS api_keys (
      id String,
      entity String,
      role String,
      name String,
      secret_sha256 String,
      created_at Int64,
      deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version)
    ORDER BY id`,
    `CREATE TABLE IF NOT EXISTS api_key_uses (
      id String,
      used_at Int64
    ) ENGINE = ReplacingMergeTree(used_at)
    ORDER BY id`,
  ],
};
