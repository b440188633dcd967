import type { Migration } from "../migrations.js";

/** Tables of the threads module. */
export const THREADS_MIGRATION: Migration = {
  version: 2,
  name: "threads",
  statements: [],
};
