import { InvalidQueryError } from "../../errors.js";
import { isoToMicros } from "../../times.js";
import type { ParamBuilder } from "../sql.js";
import { checkStrictFields, checkStrictLiteral, definite, describe, isNumeric, isText, type Literal, type LiteralTerm, type SqlTerm, type Term } from "./terms.js";

/** Comparisons (`$eq`, `$gt`, `$gte`, and `$in` through `$eq`) with the rules of compile.ts. */

export function equal(a: Term, b: Term, pb: ParamBuilder): string {
  if (a.tag === "literal" && b.tag === "literal") return literalsCompared("=", a.value, b.value, pb);
  if (a.tag === "sql" && b.tag === "sql") return fieldsCompared("=", a, b);
  const field = (a.tag === "sql" ? a : b) as SqlTerm;
  const value = (a.tag === "literal" ? a : (b as LiteralTerm)).value;
  checkStrictLiteral(field, value);
  if (value === null) {
    return field.kind === "json_leaf" ? `(${field.sql} IS NULL OR ${field.sql} = 'null')` : `(${field.sql} IS NULL)`;
  }
  const exact = exactText(field, value, pb);
  if (exact !== undefined) return exact;
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

/** A text or object literal against a field whose stored text may be cut (Field.exactEquals). */
function exactText(field: SqlTerm, value: Literal, pb: ParamBuilder): string | undefined {
  if (!field.exactEquals || value === null) return undefined;
  if (typeof value === "string") return field.exactEquals(value, pb);
  if (typeof value === "object") return field.exactEquals(JSON.stringify(value), pb);
  return undefined;
}

export function order(symbol: ">" | ">=", a: Term, b: Term, pb: ParamBuilder): string {
  if (a.tag === "literal" && b.tag === "literal") return literalsCompared(symbol, a.value, b.value, pb);
  if (a.tag === "sql" && b.tag === "sql") return fieldsCompared(symbol, a, b);
  const field = (a.tag === "sql" ? a : b) as SqlTerm;
  const value = (a.tag === "literal" ? a : (b as LiteralTerm)).value;
  if (typeof value !== "string" && typeof value !== "number") {
    throw new InvalidQueryError(`$gt/$gte compare with a number or string, not ${describe(value)}`);
  }
  checkStrictLiteral(field, value);
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
  checkStrictFields(a, b);
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