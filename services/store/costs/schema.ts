import type { Migration } from "../migrations.js";

/** Tables of the costs module. */
export const COSTS_MIGRATION: Migration = {
  version: 3,
  name: "costs",
  statements: [],
};
