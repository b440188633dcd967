import type { ConvertTarget } from "../../contract/queryExpr.js";
import { InvalidQueryError } from "../../errors.js";
import type { JsonValue } from "../../json.js";
import type { FieldKind } from "./fields.js";
import type { ParamBuilder } from "../sql.js";

/** What the compiler (compile.ts) works on: compiled operands, their kinds, the strict rules. */

export type Kind = FieldKind | "bool";
export type Literal = JsonValue;

export interface SqlTerm {
  readonly tag: "sql";
  readonly sql: string;
  readonly kind: Kind;
  readonly nullable: boolean;
  readonly strict?: true;
  /** See Field.exactEquals. */
  readonly exactEquals?: (text: string, pb: ParamBuilder) => string | undefined;
}
export interface LiteralTerm {
  readonly tag: "literal";
  readonly value: Literal;
}
export type Term = SqlTerm | LiteralTerm;

export const isText = (kind: Kind): boolean => kind === "string" || kind === "json_leaf";
export const isNumeric = (kind: Kind): boolean => kind === "number" || kind === "bool";

type Domain = "text" | "number" | "datetime" | "bool";
export function domainOf(kind: Kind): Domain {
  if (kind === "string" || kind === "json_leaf") return "text";
  return kind;
}

/** The literal types a strict field of each domain compares with (null aside, which `$eq` always takes). */
const STRICT_LITERALS: Readonly<Record<Domain, readonly string[]>> = {
  text: ["string"],
  number: ["number"],
  datetime: ["number", "string"],
  bool: ["boolean"],
};

/** The `$convert` targets a strict field of each domain takes. */
export const STRICT_CONVERSIONS: Readonly<Record<Domain, readonly ConvertTarget[]>> = {
  text: ["string", "exists"],
  number: ["double", "int", "exists"],
  datetime: ["double", "int", "exists"],
  bool: ["bool", "exists"],
};

export function describe(value: Literal): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

export const article = (word: string): string => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);

export function checkStrictLiteral(field: SqlTerm, value: Literal): void {
  if (!field.strict || value === null || STRICT_LITERALS[domainOf(field.kind)].includes(describe(value))) return;
  throw new InvalidQueryError(`cannot compare ${article(field.kind)} field with ${article(describe(value))} literal`);
}

export function checkStrictFields(a: SqlTerm, b: SqlTerm): void {
  if ((a.strict || b.strict) && domainOf(a.kind) !== domainOf(b.kind)) {
    throw new InvalidQueryError(`cannot compare ${article(a.kind)} field with ${article(b.kind)} field`);
  }
}

/** A comparison that may be NULL becomes false, keeping the logic two-valued. */
export function definite(sql: string, nullable: boolean): string {
  return nullable ? `ifNull(${sql}, 0)` : `(${sql})`;
}
