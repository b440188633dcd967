import type { Migration } from "../migrations.js";

/** Tables of the feedback module. */
export const FEEDBACK_MIGRATION: Migration = {
  version: 4,
  name: "feedback",
  statements: [],
};
