import { jsonLeafFields, type LeafCut } from "../expr/fields.js";
import { cutLeaf, JSON_PARTS, leafHash, MAX_JSON_DEPTH, MAX_LEAF_CHARS } from "./flatten.js";

/** Leaves longer than MAX_LEAF_CHARS are cut; their paths and hashes are listed (flatten.ts). */
export const LEAF_CUT: LeafCut = { maxChars: MAX_LEAF_CHARS, paths: "json_long_paths", hashes: "json_long_hashes", cut: cutLeaf, hash: leafHash };

/** `<part>.<key>...`: the flattened leaves of the JSON parts (flatten.ts); `summary.weave` is computed. */
export const CALL_JSON_LEAVES = jsonLeafFields("call JSON leaves", {
  roots: JSON_PARTS,
  paths: "json_paths",
  values: "json_values",
  maxDepth: MAX_JSON_DEPTH,
  reserved: ["summary.weave"],
  cut: LEAF_CUT,
});
