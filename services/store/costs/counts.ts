import { quoteString } from "../sql.js";

/**
 * What counts as a usage count in a call's summary (a token count, `status_counts.error`),
 * defined once for TypeScript (`countOf`, over the parsed summary) and SQL (`countSql`, over
 * a flattened leaf's text, store/calls/flatten.ts): a finite JSON number, or text holding one
 * (optional ASCII blanks around, an optional sign, decimal digits, an optional exponent).
 * Anything else is absent: NULL in SQL, null here.
 *
 * toFloat64OrNull alone does not agree with JavaScript's Number: ClickHouse 18.16 refuses
 * blanks and a leading `+` that 26.x accepts, and neither reads `Infinity`; so the SQL
 * checks the same pattern first and strips what 18.16 refuses; an overflow (`1e400`, which
 * ClickHouse reads as inf) is absent on both sides.
 */

/** The text of a count. RE2 (ClickHouse `match`) and JavaScript read it alike. */
export const NUMERIC_TEXT = "^[ \\t\\n\\r]*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?[ \\t\\n\\r]*$";
const NUMERIC = new RegExp(NUMERIC_TEXT);
/** What toFloat64OrNull on 18.16 refuses around a count: blanks and a leading `+`. */
const AROUND = "^[ \\t\\n\\r]*\\+?|[ \\t\\n\\r]+$";
const NUMERIC_SQL = quoteString(NUMERIC_TEXT);
const AROUND_SQL = quoteString(AROUND);

/** A count: a finite JSON number or numeric text; null when absent or anything else. */
export function countOf(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "string" || !NUMERIC.test(value)) return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/**
 * `countOf` of a leaf's text in SQL: Nullable(Float64), NULL when `text` (Nullable(String))
 * is NULL or not a count. Literal patterns, no parameters: usable inside lambdas and in SQL
 * built once.
 */
export function countSql(text: string): string {
  const value = `toFloat64OrNull(replaceRegexpAll(${text}, ${AROUND_SQL}, ''))`;
  return `if(match(${text}, ${NUMERIC_SQL}) AND isFinite(ifNull(${value}, 0)), ${value}, NULL)`;
}
