import type { ContainsOperation, ConvertTarget, Operand, Operation, Query } from "../../contract/queryExpr.js";
import type { ParamBuilder } from "../sql.js";
import { resolveCallField, type CallField, type CallFieldKind } from "./fields.js";
import { InvalidQueryError } from "../../errors.js";
import type { JsonValue } from "../../json.js";
import { isoToMicros } from "../../times.js";

/**
 * Compiles a `query` expression to one SQL boolean over the FINAL row of `calls`, for a
 * WHERE clause. Field SQL comes only from fields.ts; every literal is bound through the
 * ParamBuilder. Rendering is pure apart from adding parameters, in a fixed order (field
 * paths as operands are compiled, left to right; then literals as they are compared).
 *
 * Semantics (two-valued: every operation yields 0 or 1, never NULL, so `$not` of a
 * comparison on an absent leaf is true):
 * - `$eq` with a literal: a string compares as text (`toString` of a numeric field); a
 *   number compares numerically (`toFloat64OrNull` of text fields and leaves); a boolean
 *   compares to the leaf text `true`/`false`, or to 1/0 for numeric fields; null means
 *   IS NULL (for a JSON leaf: absent, or the JSON null `null`); an object or array
 *   compares its JSON text (so `{}` and `[]` match empty leaves).
 * - `$gt`/`$gte`: numeric when either side is numeric (text sides read by
 *   `toFloat64OrNull`), text otherwise; null, boolean, object literals are refused.
 * - Datetime fields (started_at, ended_at: µs) compare only with literals or with each
 *   other: a number literal is seconds since the epoch (fractions allowed), a string
 *   literal is ISO 8601 (no zone means UTC); both are turned into µs here and bound.
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
 */

/** Bounds recursion for callers that build a Query without the schema's depth check. */
const MAX_DEPTH = 64;

type Kind = CallFieldKind | "bool";
type Literal = JsonValue;

interface SqlTerm {
  readonly tag: "sql";
  readonly sql: string;
  readonly kind: Kind;
  readonly nullable: boolean;
}
interface LiteralTerm {
  readonly tag: "literal";
  readonly value: Literal;
}
type Term = SqlTerm | LiteralTerm;

/** Resolves a `$getField` path to its SQL: the call fields by default, another whitelist for other tables. */
export type FieldResolver = (path: string, pb: ParamBuilder) => CallField;

export function compileQuery(query: Query, pb: ParamBuilder, resolve: FieldResolver = resolveCallField): string {
  return compileOperation(query.$expr, pb, 0, resolve);
}

function compileOperation(op: Operation, pb: ParamBuilder, depth: number, resolve: FieldResolver): string {
  if (depth > MAX_DEPTH) throw new InvalidQueryError(`query nested deeper than ${MAX_DEPTH} levels`);
  const next = depth + 1;
  if ("$and" in op) return junction("AND", op.$and, pb, next, resolve);
  if ("$or" in op) return junction("OR", op.$or, pb, next, resolve);
  if ("$not" in op) {
    const [inner] = op.$not;
    if (op.$not.length !== 1 || inner === undefined) throw new InvalidQueryError("$not takes exactly one operand");
    return `(NOT ${asBool(compileOperand(inner, pb, next, resolve), pb)})`;
  }
  if ("$eq" in op) {
    const [a, b] = pair("$eq", op.$eq);
    return equal(compileOperand(a, pb, next, resolve), compileOperand(b, pb, next, resolve), pb);
  }
  if ("$gt" in op) {
    const [a, b] = pair("$gt", op.$gt);
    return order(">", compileOperand(a, pb, next, resolve), compileOperand(b, pb, next, resolve), pb);
  }
  if ("$gte" in op) {
    const [a, b] = pair("$gte", op.$gte);
    return order(">=", compileOperand(a, pb, next, resolve), compileOperand(b, pb, next, resolve), pb);
  }
  if ("$in" in op) {
    const [needle, list] = op.$in;
    if (op.$in.length !== 2 || !Array.isArray(list)) throw new InvalidQueryError("$in takes [operand, [operands...]]");
    const term = compileOperand(needle, pb, next, resolve);
    if (list.length === 0) return "0";
    const parts = list.map((item) => equal(term, compileOperand(item, pb, next, resolve), pb));
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(" OR ")})`;
  }
  if ("$contains" in op) return contains(op.$contains, pb, next, resolve);
  throw new InvalidQueryError(`unknown operation: ${Object.keys(op).join(", ")}`);
}

function pair(name: string, operands: readonly Operand[]): [Operand, Operand] {
  const [a, b] = operands;
  if (operands.length !== 2 || a === undefined || b === undefined) throw new InvalidQueryError(`${name} takes exactly two operands`);
  return [a, b];
}

function junction(word: "AND" | "OR", operands: readonly Operand[], pb: ParamBuilder, depth: number, resolve: FieldResolver): string {
  if (operands.length === 0) throw new InvalidQueryError(`$${word.toLowerCase()} needs at least one operand`);
  const parts = operands.map((operand) => asBool(compileOperand(operand, pb, depth, resolve), pb));
  return parts.length === 1 ? (parts[0] as string) : `(${parts.join(` ${word} `)})`;
}

function compileOperand(operand: Operand, pb: ParamBuilder, depth: number, resolve: FieldResolver): Term {
  if (depth > MAX_DEPTH) throw new InvalidQueryError(`query nested deeper than ${MAX_DEPTH} levels`);
  if ("$literal" in operand) return { tag: "literal", value: operand.$literal };
  if ("$getField" in operand) {
    const field = resolve(operand.$getField, pb);
    return { tag: "sql", sql: field.sql, kind: field.kind, nullable: field.nullable };
  }
  if ("$convert" in operand) return convert(compileOperand(operand.$convert.input, pb, depth + 1, resolve), operand.$convert.to, pb);
  return { tag: "sql", sql: compileOperation(operand, pb, depth, resolve), kind: "bool", nullable: false };
}

// ---- comparisons -------------------------------------------------------------------

const isText = (kind: Kind): boolean => kind === "string" || kind === "json_leaf";
const isNumeric = (kind: Kind): boolean => kind === "number" || kind === "bool";

/** A comparison that may be NULL becomes false, keeping the logic two-valued. */
function definite(sql: string, nullable: boolean): string {
  return nullable ? `ifNull(${sql}, 0)` : `(${sql})`;
}

function describe(value: Literal): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function equal(a: Term, b: Term, pb: ParamBuilder): string {
  if (a.tag === "literal" && b.tag === "literal") return literalsCompared("=", a.value, b.value, pb);
  if (a.tag === "sql" && b.tag === "sql") return fieldsCompared("=", a, b);
  const field = (a.tag === "sql" ? a : b) as SqlTerm;
  const value = (a.tag === "literal" ? a : (b as LiteralTerm)).value;
  if (value === null) {
    return field.kind === "json_leaf" ? `(${field.sql} IS NULL OR ${field.sql} = 'null')` : `(${field.sql} IS NULL)`;
  }
  // The literal picks the domain; the field side is converted to it.
  let fieldSql = field.sql;
  let nullable = field.nullable;
  let literalSql: string;
  if (field.kind === "datetime") {
    literalSql = pb.int(toMicros(value, field.sql));
  } else if (typeof value === "string") {
    if (isNumeric(field.kind)) fieldSql = `toString(${field.sql})`;
    literalSql = pb.str(value);
  } else if (typeof value === "number") {
    if (isText(field.kind)) {
      fieldSql = `toFloat64OrNull(${field.sql})`;
      nullable = true;
    }
    literalSql = pb.float(value);
  } else if (typeof value === "boolean") {
    literalSql = isNumeric(field.kind) ? pb.int(value ? 1 : 0) : pb.str(value ? "true" : "false");
  } else if (isText(field.kind)) {
    literalSql = pb.str(JSON.stringify(value));
  } else {
    throw new InvalidQueryError(`cannot compare a numeric field with an ${describe(value)} literal`);
  }
  const sql = a.tag === "sql" ? `${fieldSql} = ${literalSql}` : `${literalSql} = ${fieldSql}`;
  return definite(sql, nullable);
}

function order(symbol: ">" | ">=", a: Term, b: Term, pb: ParamBuilder): string {
  if (a.tag === "literal" && b.tag === "literal") return literalsCompared(symbol, a.value, b.value, pb);
  if (a.tag === "sql" && b.tag === "sql") return fieldsCompared(symbol, a, b);
  const field = (a.tag === "sql" ? a : b) as SqlTerm;
  const value = (a.tag === "literal" ? a : (b as LiteralTerm)).value;
  if (typeof value !== "string" && typeof value !== "number") {
    throw new InvalidQueryError(`$gt/$gte compare with a number or string, not ${describe(value)}`);
  }
  let fieldSql = field.sql;
  let literalSql: string;
  let nullable = field.nullable;
  if (field.kind === "datetime") {
    literalSql = pb.int(toMicros(value, field.sql));
  } else if (typeof value === "number") {
    if (isText(field.kind)) {
      fieldSql = `toFloat64OrNull(${field.sql})`;
      nullable = true;
    }
    literalSql = pb.float(value);
  } else if (isNumeric(field.kind)) {
    literalSql = `toFloat64OrNull(${pb.str(value)})`;
    nullable = true;
  } else {
    literalSql = pb.str(value);
  }
  const sql = a.tag === "sql" ? `${fieldSql} ${symbol} ${literalSql}` : `${literalSql} ${symbol} ${fieldSql}`;
  return definite(sql, nullable);
}

function fieldsCompared(symbol: "=" | ">" | ">=", a: SqlTerm, b: SqlTerm): string {
  const nullable = a.nullable || b.nullable;
  if (a.kind === "datetime" || b.kind === "datetime") {
    if (a.kind !== b.kind) throw new InvalidQueryError("a datetime field compares only with a datetime field or a literal");
    return definite(`${a.sql} ${symbol} ${b.sql}`, nullable);
  }
  if (isNumeric(a.kind) || isNumeric(b.kind)) {
    const num = (t: SqlTerm): string => (isText(t.kind) ? `toFloat64OrNull(${t.sql})` : t.sql);
    return definite(`${num(a)} ${symbol} ${num(b)}`, nullable || isText(a.kind) || isText(b.kind));
  }
  return definite(`${a.sql} ${symbol} ${b.sql}`, nullable);
}

/** Two literals: both bound, compared in SQL; they must be of one type. */
function literalsCompared(symbol: "=" | ">" | ">=", a: Literal, b: Literal, pb: ParamBuilder): string {
  if (typeof a === "number" && typeof b === "number") return `(${pb.float(a)} ${symbol} ${pb.float(b)})`;
  if (typeof a === "string" && typeof b === "string") return `(${pb.str(a)} ${symbol} ${pb.str(b)})`;
  if (symbol === "=" && typeof a === "boolean" && typeof b === "boolean") return `(${pb.int(a ? 1 : 0)} = ${pb.int(b ? 1 : 0)})`;
  throw new InvalidQueryError(`cannot compare two literals of types ${describe(a)} and ${describe(b)}`);
}

// ---- datetimes ---------------------------------------------------------------------

/** A datetime literal in µs: a number is seconds since the epoch, a string ISO 8601 (no zone: UTC). */
export function toMicros(value: Literal, field = "a datetime field"): number {
  let micros: number | null;
  if (typeof value === "number") {
    micros = Math.round(value * 1_000_000);
  } else if (typeof value === "string") {
    micros = isoToMicros(value);
    if (micros === null) throw new InvalidQueryError(`not a valid datetime (ISO 8601 expected): ${JSON.stringify(value)}`);
  } else {
    throw new InvalidQueryError(`${field} compares with seconds since the epoch or an ISO 8601 string, not ${describe(value)}`);
  }
  if (!Number.isSafeInteger(micros)) throw new InvalidQueryError(`datetime out of range: ${String(value)}`);
  return micros;
}

// ---- contains, convert, bool -------------------------------------------------------

function contains(spec: ContainsOperation["$contains"], pb: ParamBuilder, depth: number, resolve: FieldResolver): string {
  const input = textOf(compileOperand(spec.input, pb, depth, resolve), pb, "input");
  const substr = textOf(compileOperand(spec.substr, pb, depth, resolve), pb, "substr");
  const fn = spec.case_insensitive === true ? "positionCaseInsensitiveUTF8" : "positionUTF8";
  return definite(`${fn}(${input.sql}, ${substr.sql}) > 0`, input.nullable || substr.nullable);
}

function textOf(term: Term, pb: ParamBuilder, role: string): { sql: string; nullable: boolean } {
  if (term.tag === "literal") {
    if (typeof term.value !== "string") throw new InvalidQueryError(`$contains ${role} must be a string, not ${describe(term.value)}`);
    return { sql: pb.str(term.value), nullable: false };
  }
  if (isText(term.kind)) return { sql: term.sql, nullable: term.nullable };
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
  const b = term.kind === "bool" ? term : convert(term, "bool", pb);
  if (b.tag !== "sql") throw new InvalidQueryError("not a condition");
  return b.nullable ? `ifNull(${b.sql}, 0)` : b.sql;
}
