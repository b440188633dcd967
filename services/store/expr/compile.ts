import type { ContainsOperation, ConvertTarget, Operand, Operation, Query } from "../../contract/queryExpr.js";
import { InvalidQueryError } from "../../errors.js";
import type { ParamBuilder } from "../sql.js";
import { equal, order } from "./compare.js";
import type { FieldScope, Fields } from "./fields.js";
import { article, definite, describe, domainOf, isNumeric, isText, STRICT_CONVERSIONS, type Literal, type SqlTerm, type Term } from "./terms.js";

/**
 * Compiles a `query` expression to one SQL boolean over a row of the queried table, for a
 * WHERE clause. Field SQL comes only from the Fields passed in (fields.ts); every literal
 * is bound through the ParamBuilder. Rendering is pure apart from adding parameters, in a
 * fixed order (field paths as operands are compiled, left to right; then literals as they
 * are compared).
 *
 * Semantics (two-valued: every operation yields 0 or 1, never NULL, so `$not` of a
 * comparison on an absent leaf is true):
 * - `$eq` with a literal: a string compares as text (`toString` of a numeric field); a
 *   number compares numerically (`toFloat64OrNull` of text fields and leaves); a boolean
 *   compares to the leaf text `true`/`false`, or to 1/0 for numeric fields; null means
 *   IS NULL (for a JSON leaf: absent, or the JSON null `null`); an object or array
 *   compares its JSON text (so `{}` and `[]` match empty leaves).
 * - `$gt`/`$gte`: numeric when either side is numeric (text sides read by
 *   `toFloat64OrNull`), text otherwise (bytewise); null, boolean, object literals are refused.
 * - Datetime fields (µs) compare only with literals or with each other: a number literal
 *   is seconds since the epoch (fractions allowed), a string literal is ISO 8601 (no zone
 *   means UTC); both are turned into µs here and bound.
 * - Two fields: both datetime → raw; either numeric → numeric; else text.
 * - `$in`: `$eq` against each listed operand, OR-ed; an empty list matches nothing.
 * - `$contains`: positionUTF8 / positionCaseInsensitiveUTF8 > 0 on the text of both sides.
 * - `$convert`: double → toFloat64OrNull, int → toInt64OrNull (text) / toInt64 (numbers),
 *   string → toString, bool → `true`/`1` is 1, `false`/`0` is 0, other text NULL,
 *   exists → IS NOT NULL. A datetime converts to seconds (double, int) or exists only.
 * - An operand in a boolean position (`$and`, `$or`, `$not`) is read as a bool (as
 *   `$convert` to bool; a literal is true when `true`, a non-zero number, "true" or "1",
 *   bound as 1 or 0); NULL counts as false.
 * - Literal against literal: bound both sides; they must be of one type.
 *
 * A strict field (Field.strict: typed record columns) is never read as another kind; what
 * the rules above would do by converting it is refused instead (InvalidQueryError), and
 * what they accept compiles exactly as for any field:
 * - it compares with literals of its kind (a string field with strings, a number field
 *   with numbers, a datetime field with seconds or ISO 8601; any field with null in
 *   `$eq`) and with fields of its domain (text: string and JSON leaves; number; datetime);
 * - it is a condition only through a comparison, never alone in `$and`/`$or`/`$not`;
 * - `$contains` takes it only when it is text;
 * - `$convert` keeps it in its kind (string → string; number → double, int; a datetime to
 *   its seconds, double or int, the number form its literals take) or asks `exists`; the
 *   result of converting a strict field is strict.
 */

/** Bounds recursion for callers that build a Query without the schema's depth check. */
const MAX_DEPTH = 64;

/** What a compilation reads fields from. */
interface Source {
  readonly fields: Fields;
  readonly pb: ParamBuilder;
  readonly scope: FieldScope;
}

export function compileQuery(query: Query, fields: Fields, pb: ParamBuilder, scope: FieldScope = {}): string {
  return compileOperation(query.$expr, { fields, pb, scope }, 0);
}

function compileOperation(op: Operation, src: Source, depth: number): string {
  if (depth > MAX_DEPTH) throw new InvalidQueryError(`query nested deeper than ${MAX_DEPTH} levels`);
  const next = depth + 1;
  const { pb } = src;
  if ("$and" in op) return junction("AND", op.$and, src, next);
  if ("$or" in op) return junction("OR", op.$or, src, next);
  if ("$not" in op) {
    const [inner] = op.$not;
    if (op.$not.length !== 1 || inner === undefined) throw new InvalidQueryError("$not takes exactly one operand");
    return `(NOT ${asBool(compileOperand(inner, src, next), pb)})`;
  }
  if ("$eq" in op) {
    const [a, b] = pair("$eq", op.$eq);
    return equal(compileOperand(a, src, next), compileOperand(b, src, next), pb);
  }
  if ("$gt" in op) {
    const [a, b] = pair("$gt", op.$gt);
    return order(">", compileOperand(a, src, next), compileOperand(b, src, next), pb);
  }
  if ("$gte" in op) {
    const [a, b] = pair("$gte", op.$gte);
    return order(">=", compileOperand(a, src, next), compileOperand(b, src, next), pb);
  }
  if ("$in" in op) {
    const [needle, list] = op.$in;
    if (op.$in.length !== 2 || !Array.isArray(list)) throw new InvalidQueryError("$in takes [operand, [operands...]]");
    const term = compileOperand(needle, src, next);
    if (list.length === 0) return "0";
    const parts = list.map((item) => equal(term, compileOperand(item, src, next), pb));
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(" OR ")})`;
  }
  if ("$contains" in op) return contains(op.$contains, src, next);
  throw new InvalidQueryError(`unknown operation: ${Object.keys(op).join(", ")}`);
}

function pair(name: string, operands: readonly Operand[]): [Operand, Operand] {
  const [a, b] = operands;
  if (operands.length !== 2 || a === undefined || b === undefined) throw new InvalidQueryError(`${name} takes exactly two operands`);
  return [a, b];
}

function junction(word: "AND" | "OR", operands: readonly Operand[], src: Source, depth: number): string {
  if (operands.length === 0) throw new InvalidQueryError(`$${word.toLowerCase()} needs at least one operand`);
  const parts = operands.map((operand) => asBool(compileOperand(operand, src, depth), src.pb));
  return parts.length === 1 ? (parts[0] as string) : `(${parts.join(` ${word} `)})`;
}

function compileOperand(operand: Operand, src: Source, depth: number): Term {
  if (depth > MAX_DEPTH) throw new InvalidQueryError(`query nested deeper than ${MAX_DEPTH} levels`);
  if ("$literal" in operand) return { tag: "literal", value: operand.$literal };
  if ("$getField" in operand) return { tag: "sql", ...src.fields.field(operand.$getField, src.pb, src.scope) };
  if ("$convert" in operand) return convert(compileOperand(operand.$convert.input, src, depth + 1), operand.$convert.to, src.pb);
  return { tag: "sql", sql: compileOperation(operand, src, depth), kind: "bool", nullable: false };
}

// ---- contains, convert, bool -------------------------------------------------------

function contains(spec: ContainsOperation["$contains"], src: Source, depth: number): string {
  const input = textOf(compileOperand(spec.input, src, depth), src.pb, "input");
  const substr = textOf(compileOperand(spec.substr, src, depth), src.pb, "substr");
  const fn = spec.case_insensitive === true ? "positionCaseInsensitiveUTF8" : "positionUTF8";
  return definite(`${fn}(${input.sql}, ${substr.sql}) > 0`, input.nullable || substr.nullable);
}

function textOf(term: Term, pb: ParamBuilder, role: string): { sql: string; nullable: boolean } {
  if (term.tag === "literal") {
    if (typeof term.value !== "string") throw new InvalidQueryError(`$contains ${role} must be a string, not ${describe(term.value)}`);
    return { sql: pb.str(term.value), nullable: false };
  }
  if (isText(term.kind)) return { sql: term.sql, nullable: term.nullable };
  if (term.strict) throw new InvalidQueryError(`$contains ${role} must be text, not ${article(term.kind)} field`);
  if (isNumeric(term.kind)) return { sql: `toString(${term.sql})`, nullable: term.nullable };
  throw new InvalidQueryError(`$contains ${role} cannot be a datetime field`);
}

function literalAsSql(value: Literal, pb: ParamBuilder): SqlTerm {
  if (typeof value === "string") return { tag: "sql", sql: pb.str(value), kind: "string", nullable: false };
  if (typeof value === "number") return { tag: "sql", sql: pb.float(value), kind: "number", nullable: false };
  if (typeof value === "boolean") return { tag: "sql", sql: pb.int(value ? 1 : 0), kind: "bool", nullable: false };
  if (value === null) throw new InvalidQueryError("a null literal has no SQL value here");
  return { tag: "sql", sql: pb.str(JSON.stringify(value)), kind: "json_leaf", nullable: false };
}

function convert(input: Term, to: ConvertTarget, pb: ParamBuilder): Term {
  if (input.tag === "literal" && input.value === null) {
    // null stays null, and does not exist.
    return to === "exists" ? { tag: "literal", value: false } : input;
  }
  const t = input.tag === "literal" ? literalAsSql(input.value, pb) : input;
  if (t.strict && !STRICT_CONVERSIONS[domainOf(t.kind)].includes(to)) {
    throw new InvalidQueryError(`cannot convert ${article(t.kind)} field to ${to}`);
  }
  const converted = convertedSql(t, to);
  return t.strict && to !== "exists" ? { ...converted, strict: true } : converted;
}

function convertedSql(t: SqlTerm, to: ConvertTarget): SqlTerm {
  const text = isText(t.kind);
  switch (to) {
    case "exists":
      return { tag: "sql", sql: `(${t.sql} IS NOT NULL)`, kind: "bool", nullable: false };
    case "double":
      if (t.kind === "datetime") return { tag: "sql", sql: `(${t.sql} / 1000000)`, kind: "number", nullable: t.nullable };
      return text
        ? { tag: "sql", sql: `toFloat64OrNull(${t.sql})`, kind: "number", nullable: true }
        : { tag: "sql", sql: `toFloat64(${t.sql})`, kind: "number", nullable: t.nullable };
    case "int":
      if (t.kind === "datetime") return { tag: "sql", sql: `intDiv(${t.sql}, 1000000)`, kind: "number", nullable: t.nullable };
      return text
        ? { tag: "sql", sql: `toInt64OrNull(${t.sql})`, kind: "number", nullable: true }
        : { tag: "sql", sql: `toInt64(${t.sql})`, kind: "number", nullable: t.nullable };
    case "string":
      if (t.kind === "datetime") throw new InvalidQueryError("a datetime field cannot be converted to string");
      return text ? { tag: "sql", sql: t.sql, kind: "string", nullable: t.nullable } : { tag: "sql", sql: `toString(${t.sql})`, kind: "string", nullable: t.nullable };
    case "bool":
      if (t.kind === "datetime") throw new InvalidQueryError("a datetime field cannot be converted to bool");
      if (t.kind === "bool") return t;
      if (t.kind === "number") return { tag: "sql", sql: `(${t.sql} != 0)`, kind: "bool", nullable: t.nullable };
      return { tag: "sql", sql: boolFromText(t.sql), kind: "bool", nullable: true };
  }
}

/** `true`/`1` → 1, `false`/`0` → 0, other text and NULL → NULL. */
function boolFromText(sql: string): string {
  return `multiIf(${sql} IN ('true', '1'), 1, ${sql} IN ('false', '0'), 0, NULL)`;
}

/** Reads a term in a boolean position; NULL counts as false. */
function asBool(term: Term, pb: ParamBuilder): string {
  if (term.tag === "literal") {
    const value = term.value;
    if (value !== null && typeof value === "object") throw new InvalidQueryError(`an ${describe(value)} literal is not a condition`);
    const truth =
      value === true || (typeof value === "number" && value !== 0) || value === "true" || value === "1";
    // Still bound, like every literal, so the SQL never carries a value.
    return `(${pb.int(truth ? 1 : 0)} = 1)`;
  }
  if (term.strict && term.kind !== "bool") {
    throw new InvalidQueryError(`${article(term.kind)} field is not a condition; compare it with $eq, $gt, $gte or $in`);
  }
  const b = term.kind === "bool" ? term : convert(term, "bool", pb);
  if (b.tag !== "sql") throw new InvalidQueryError("not a condition");
  return b.nullable ? `ifNull(${b.sql}, 0)` : b.sql;
}
