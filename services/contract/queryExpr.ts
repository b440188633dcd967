import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import type { JsonValue } from "../json.js";

extendZodWithOpenApi(z);

/**
 * The `query` field of calls queries (spec: "Query expression"): `{"$expr": Operation}`.
 *
 * Every node is a strict object with exactly one operator key, so an unknown operator or a
 * node with two operators is a validation error instead of being read as something else.
 * What the operators mean in SQL is written in services/store/expr/compile.ts.
 */


export interface LiteralOperation {
  $literal: JsonValue;
}
export interface GetFieldOperation {
  $getField: string;
}
export const CONVERT_TARGETS = ["double", "string", "int", "bool", "exists"] as const;
export type ConvertTarget = (typeof CONVERT_TARGETS)[number];
export interface ConvertOperation {
  $convert: { input: Operand; to: ConvertTarget };
}
export interface AndOperation {
  $and: Operand[];
}
export interface OrOperation {
  $or: Operand[];
}
export interface NotOperation {
  $not: [Operand];
}
export interface EqOperation {
  $eq: [Operand, Operand];
}
export interface GtOperation {
  $gt: [Operand, Operand];
}
export interface GteOperation {
  $gte: [Operand, Operand];
}
export interface InOperation {
  $in: [Operand, Operand[]];
}
export interface ContainsOperation {
  $contains: { input: Operand; substr: Operand; case_insensitive?: boolean | undefined };
}

export type Operation =
  | AndOperation
  | OrOperation
  | NotOperation
  | EqOperation
  | GtOperation
  | GteOperation
  | InOperation
  | ContainsOperation;
export type Operand = LiteralOperation | GetFieldOperation | ConvertOperation | Operation;
export interface Query {
  $expr: Operation;
}

/** Nesting deeper than this is refused before parsing, so a hostile body cannot exhaust the stack. */
export const MAX_QUERY_DEPTH = 64;

export const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValueSchema), z.record(z.string(), JsonValueSchema)]),
).openapi("QueryJsonValue");

export const OperandSchema: z.ZodType<Operand> = z.lazy(() =>
  z.union([
    z.strictObject({ $literal: JsonValueSchema }),
    z.strictObject({ $getField: z.string().min(1) }),
    z.strictObject({ $convert: z.strictObject({ input: OperandSchema, to: z.enum(CONVERT_TARGETS) }) }),
    OperationSchema,
  ]),
).openapi("QueryOperand");

export const OperationSchema: z.ZodType<Operation> = z.lazy(() =>
  z.union([
    z.strictObject({ $and: z.array(OperandSchema).min(1) }),
    z.strictObject({ $or: z.array(OperandSchema).min(1) }),
    z.strictObject({ $not: z.tuple([OperandSchema]) }),
    z.strictObject({ $eq: z.tuple([OperandSchema, OperandSchema]) }),
    z.strictObject({ $gt: z.tuple([OperandSchema, OperandSchema]) }),
    z.strictObject({ $gte: z.tuple([OperandSchema, OperandSchema]) }),
    z.strictObject({ $in: z.tuple([OperandSchema, z.array(OperandSchema)]) }),
    z.strictObject({
      $contains: z.strictObject({ input: OperandSchema, substr: OperandSchema, case_insensitive: z.boolean().optional() }),
    }),
  ]),
).openapi("QueryOperation");

const QueryShape = z.strictObject({ $expr: OperationSchema });

/** Depth of nested arrays and objects, stopping as soon as it passes `limit`. */
function depthExceeds(value: unknown, limit: number): boolean {
  if (limit < 0) return true;
  if (typeof value !== "object" || value === null) return false;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.some((child) => depthExceeds(child, limit - 1));
}

// Checked before the shape, so a hostile body cannot exhaust the stack while being parsed.
// Each operator level is an object plus an array, hence twice the operator depth.
export const QuerySchema = z
  .preprocess((value, ctx) => {
    if (depthExceeds(value, 2 * MAX_QUERY_DEPTH)) {
      ctx.addIssue({ code: "custom", message: `query nested deeper than ${MAX_QUERY_DEPTH} levels`, input: value });
      return z.NEVER;
    }
    return value;
  }, QueryShape)
  .openapi("Query", { description: 'Filter expression: {"$expr": Operation}' });
