import type { ContainsOperation, ConvertTarget, Operand, Operation, Query } from "../../contract/queryExpr.js";
import { toMicros } from "../calls/expr.js";
import type { ParamBuilder } from "../sql.js";
import { COST_RECORD_FIELDS, type CostRecordField } from "../../contract/costs.js";
import type { JsonValue } from "../../json.js";
import { InvalidQueryError, InvalidFieldError } from "../../errors.js";

/**
 * The `query` expression of `/cost/query` and `/cost/purge`, compiled to one SQL boolean
 * over the current price rows (costsQuery.ts), and the ORDER BY of `/cost/query`.
 *
 * The fields are the cost record's, each a non-null column of one kind: text (id, llm_id,
 * the units, provider_id), number (the two token costs) and datetime (effective_date, µs).
 * The calls compiler (../calls/expr.ts) is not reused: its fields are JSON leaves and
 * nullable columns of `calls`; here every field is typed and never NULL, so the rules are
 * stricter and shorter:
 *
 * - `$getField` names one of the fields above; anything else is an InvalidFieldError (422).
 * - `$eq`, `$gt`, `$gte` compare a field with a literal or with a field of the same kind;
 *   a text field takes a string, a number field a number, effective_date a number (seconds
 *   since the epoch) or an ISO 8601 string; `$eq` with null is false (no field is null).
 *   `$gt`/`$gte` on text compare bytewise. Other pairs are an InvalidQueryError (422).
 * - `$in`: `$eq` against each listed operand, OR-ed; an empty list matches nothing.
 * - `$contains`: a text field (or string literal) and a string; `case_insensitive` honoured.
 * - `$convert` of a field: `double`/`int` of a number field, `string` of a text field,
 *   `exists` (always true); other conversions are refused.
 * - `$and`, `$or`, `$not` take operations or boolean literals. Two literals compare as bound
 *   values. Every literal reaches SQL through the ParamBuilder.
 */

type Kind = "text" | "number" | "datetime" | "bool";

const FIELD_KINDS: Readonly<Record<CostRecordField, Exclude<Kind, "bool">>> = {
  id: "text",
  llm_id: "text",
  prompt_token_cost: "number",
  completion_token_cost: "number",
  prompt_token_cost_unit: "text",
  completion_token_cost_unit: "text",
  effective_date: "datetime",
  provider_id: "text",
};

const MAX_DEPTH = 64;

interface SqlTerm {
  readonly tag: "sql";
  readonly sql: string;
  readonly kind: Kind;
}
interface LiteralTerm {
  readonly tag: "literal";
  readonly value: JsonValue;
}
type Term = SqlTerm | LiteralTerm;

export function isCostField(name: string): name is CostRecordField {
  return (COST_RECORD_FIELDS as readonly string[]).includes(name);
}

/** A cost field's column (its name in the current-prices subquery). */
export function costFieldSql(name: string): { sql: string; kind: Exclude<Kind, "bool"> } {
  if (!isCostField(name)) throw new InvalidFieldError(`unknown cost field: ${name} (known: ${COST_RECORD_FIELDS.join(", ")})`);
  return { sql: name, kind: FIELD_KINDS[name] };
}

export function compileCostQuery(query: Query, pb: ParamBuilder): string {
  return operation(query.$expr, pb, 0);
}

function describe(value: JsonValue): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function operation(op: Operation, pb: ParamBuilder, depth: number): string {
  if (depth > MAX_DEPTH) throw new InvalidQueryError(`query nested deeper than ${MAX_DEPTH} levels`);
  const next = depth + 1;
  if ("$and" in op) return junction("AND", op.$and, pb, next);
  if ("$or" in op) return junction("OR", op.$or, pb, next);
  if ("$not" in op) {
    const [inner] = op.$not;
    if (op.$not.length !== 1 || inner === undefined) throw new InvalidQueryError("$not takes exactly one operand");
    return `(NOT ${condition(operand(inner, pb, next), pb)})`;
  }
  if ("$eq" in op) return compare("=", op.$eq, pb, next);
  if ("$gt" in op) return compare(">", op.$gt, pb, next);
  if ("$gte" in op) return compare(">=", op.$gte, pb, next);
  if ("$in" in op) {
    const [needle, list] = op.$in;
    if (op.$in.length !== 2 || !Array.isArray(list)) throw new InvalidQueryError("$in takes [operand, [operands...]]");
    if (list.length === 0) return "0";
    const left = operand(needle, pb, next);
    const parts = list.map((item) => comparison("=", left, operand(item, pb, next), pb));
    return parts.length === 1 ? parts[0]! : `(${parts.join(" OR ")})`;
  }
  if ("$contains" in op) return contains(op.$contains, pb, next);
  throw new InvalidQueryError(`unknown operation: ${Object.keys(op).join(", ")}`);
}

function junction(word: "AND" | "OR", operands: readonly Operand[], pb: ParamBuilder, depth: number): string {
  if (operands.length === 0) throw new InvalidQueryError(`$${word.toLowerCase()} needs at least one operand`);
  const parts = operands.map((o) => condition(operand(o, pb, depth), pb));
  return parts.length === 1 ? parts[0]! : `(${parts.join(` ${word} `)})`;
}

function operand(o: Operand, pb: ParamBuilder, depth: number): Term {
  if (depth > MAX_DEPTH) throw new InvalidQueryError(`query nested deeper than ${MAX_DEPTH} levels`);
  if ("$literal" in o) return { tag: "literal", value: o.$literal };
  if ("$getField" in o) {
    const field = costFieldSql(o.$getField);
    return { tag: "sql", sql: field.sql, kind: field.kind };
  }
  if ("$convert" in o) return convert(operand(o.$convert.input, pb, depth + 1), o.$convert.to);
  return { tag: "sql", sql: operation(o, pb, depth), kind: "bool" };
}

function convert(input: Term, to: ConvertTarget): Term {
  if (input.tag !== "sql" || input.kind === "bool") throw new InvalidQueryError("$convert takes a cost field");
  if (to === "exists") return { tag: "sql", sql: "1", kind: "bool" };
  if ((to === "double" || to === "int") && input.kind === "number") {
    return { tag: "sql", sql: to === "double" ? input.sql : `toInt64(${input.sql})`, kind: "number" };
  }
  if (to === "string" && input.kind === "text") return input;
  throw new InvalidQueryError(`cannot convert a ${input.kind} cost field to ${to}`);
}

/** A term in a boolean position. */
function condition(term: Term, pb: ParamBuilder): string {
  if (term.tag === "literal") {
    if (typeof term.value !== "boolean") throw new InvalidQueryError(`a ${describe(term.value)} literal is not a condition`);
    return `(${pb.int(term.value ? 1 : 0)} = 1)`;
  }
  if (term.kind !== "bool") throw new InvalidQueryError("a cost field is not a condition; compare it with $eq, $gt, $gte or $in");
  return term.sql;
}

function compare(symbol: "=" | ">" | ">=", operands: readonly Operand[], pb: ParamBuilder, depth: number): string {
  const [a, b] = operands;
  if (operands.length !== 2 || a === undefined || b === undefined) throw new InvalidQueryError("comparisons take exactly two operands");
  return comparison(symbol, operand(a, pb, depth), operand(b, pb, depth), pb);
}

function comparison(symbol: "=" | ">" | ">=", a: Term, b: Term, pb: ParamBuilder): string {
  if (a.tag === "sql" && b.tag === "sql") {
    if (a.kind !== b.kind || a.kind === "bool") throw new InvalidQueryError(`cannot compare a ${a.kind} with a ${b.kind}`);
    return `(${a.sql} ${symbol} ${b.sql})`;
  }
  if (a.tag === "literal" && b.tag === "literal") {
    const [x, y] = [a.value, b.value];
    if (typeof x === "number" && typeof y === "number") return `(${pb.float(x)} ${symbol} ${pb.float(y)})`;
    if (typeof x === "string" && typeof y === "string") return `(${pb.str(x)} ${symbol} ${pb.str(y)})`;
    throw new InvalidQueryError(`cannot compare literals of types ${describe(x)} and ${describe(y)}`);
  }
  const field = (a.tag === "sql" ? a : b) as SqlTerm;
  const value = (a.tag === "literal" ? a : (b as LiteralTerm)).value;
  if (value === null && symbol === "=") return `(${pb.int(0)} = 1)`;
  const literal = literalFor(field, value, pb);
  return a.tag === "sql" ? `(${field.sql} ${symbol} ${literal})` : `(${literal} ${symbol} ${field.sql})`;
}

function literalFor(field: SqlTerm, value: JsonValue, pb: ParamBuilder): string {
  switch (field.kind) {
    case "text":
      if (typeof value === "string") return pb.str(value);
      break;
    case "number":
      if (typeof value === "number") return pb.float(value);
      break;
    case "datetime":
      if (typeof value === "number" || typeof value === "string") return pb.int(toMicros(value, "effective_date"));
      break;
    case "bool":
      if (typeof value === "boolean") return pb.int(value ? 1 : 0);
      break;
  }
  throw new InvalidQueryError(`cannot compare a ${field.kind} with a ${describe(value)} literal`);
}

function contains(spec: ContainsOperation["$contains"], pb: ParamBuilder, depth: number): string {
  const text = (term: Term, role: string): string => {
    if (term.tag === "literal") {
      if (typeof term.value !== "string") throw new InvalidQueryError(`$contains ${role} must be a string`);
      return pb.str(term.value);
    }
    if (term.kind !== "text") throw new InvalidQueryError(`$contains ${role} must be a text field`);
    return term.sql;
  };
  const input = text(operand(spec.input, pb, depth), "input");
  const substr = text(operand(spec.substr, pb, depth), "substr");
  const fn = spec.case_insensitive === true ? "positionCaseInsensitiveUTF8" : "positionUTF8";
  return `(${fn}(${input}, ${substr}) > 0)`;
}
