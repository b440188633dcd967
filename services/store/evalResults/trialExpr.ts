import type { Operand, Operation } from "../../contract/queryExpr.js";
import { InvalidFieldError } from "../../errors.js";
import { isJsonObject } from "../../json.js";

/**
 * The query expressions of eval_results filters, evaluated on trials in memory (the trials are
 * read whole to be grouped anyway). Fields: `row_digest`, `predict_and_score_call_id`,
 * `predict_call_id`, `model_latency_seconds`, `total_tokens`, `total_cost`, and paths into
 * `scores` and `model_output` (`scores.correct`, `model_output.answer`). Semantics follow the
 * calls query compiler where they meet: a missing field is null, comparisons with null are
 * false, `$contains` is on text, `$eq` compares numbers as numbers and anything else by JSON.
 */

const SCALAR_FIELDS = new Set(["row_digest", "predict_and_score_call_id", "predict_call_id", "model_latency_seconds", "total_tokens", "total_cost"]);
const TREE_FIELDS = new Set(["scores", "model_output"]);

interface TrialFields {
  readonly predict_and_score_call_id: string;
  readonly predict_call_id?: string | null | undefined;
  readonly model_output?: unknown;
  readonly scores: Record<string, unknown>;
  readonly model_latency_seconds?: number | null | undefined;
  readonly total_tokens?: number | null | undefined;
  readonly total_cost?: number | null | undefined;
}

/** Refuses (422) a field that trials do not have. */
export function checkField(path: string, loc: (string | number)[]): void {
  const head = path.split(".")[0] ?? "";
  if (SCALAR_FIELDS.has(path) || TREE_FIELDS.has(head)) return;
  throw new InvalidFieldError(`unknown field ${JSON.stringify(path)}: use row_digest, model_latency_seconds, total_tokens, total_cost, scores.<scorer>[.<path>] or model_output[.<path>]`, loc);
}

/** Checks every `$getField` of an expression. */
export function checkExprFields(node: Operand, loc: (string | number)[]): void {
  if ("$getField" in node) return checkField(node.$getField, loc);
  if ("$literal" in node) return;
  for (const child of children(node)) checkExprFields(child, loc);
}

function children(node: Operand): Operand[] {
  if ("$convert" in node) return [node.$convert.input];
  if ("$and" in node) return node.$and;
  if ("$or" in node) return node.$or;
  if ("$not" in node) return node.$not;
  if ("$eq" in node) return node.$eq;
  if ("$gt" in node) return node.$gt;
  if ("$gte" in node) return node.$gte;
  if ("$in" in node) return [node.$in[0], ...node.$in[1]];
  if ("$contains" in node) return [node.$contains.input, node.$contains.substr];
  return [];
}

/** A trial's value at a field path; undefined when absent. */
export function fieldOf(rowDigest: string, trial: TrialFields, path: string): unknown {
  if (path === "row_digest") return rowDigest;
  const [head, ...rest] = path.split(".");
  let value: unknown = (trial as unknown as Record<string, unknown>)[head ?? ""];
  for (const key of rest) {
    if (isJsonObject(value)) value = value[key];
    else if (Array.isArray(value) && /^\d+$/.test(key)) value = value[Number(key)];
    else return undefined;
  }
  return value;
}

type Lookup = (path: string) => unknown;

export function evaluateExpr(op: Operation, lookup: Lookup): boolean {
  return truthy(valueOf(op, lookup));
}

const truthy = (v: unknown): boolean => v === true || (typeof v === "number" && v !== 0) || (typeof v === "string" && v !== "");

function valueOf(node: Operand, lookup: Lookup): unknown {
  if ("$literal" in node) return node.$literal;
  if ("$getField" in node) return lookup(node.$getField);
  if ("$convert" in node) return convert(valueOf(node.$convert.input, lookup), node.$convert.to);
  if ("$and" in node) return node.$and.every((n) => truthy(valueOf(n, lookup)));
  if ("$or" in node) return node.$or.some((n) => truthy(valueOf(n, lookup)));
  if ("$not" in node) return !truthy(valueOf(node.$not[0], lookup));
  if ("$eq" in node) return equal(valueOf(node.$eq[0], lookup), valueOf(node.$eq[1], lookup));
  if ("$gt" in node) return compare(valueOf(node.$gt[0], lookup), valueOf(node.$gt[1], lookup), (c) => c > 0);
  if ("$gte" in node) return compare(valueOf(node.$gte[0], lookup), valueOf(node.$gte[1], lookup), (c) => c >= 0);
  if ("$in" in node) {
    const v = valueOf(node.$in[0], lookup);
    return node.$in[1].some((n) => equal(v, valueOf(n, lookup)));
  }
  const { input, substr, case_insensitive } = node.$contains;
  const [text, part] = [valueOf(input, lookup), valueOf(substr, lookup)];
  if (typeof text !== "string" || typeof part !== "string") return false;
  return case_insensitive ? text.toLowerCase().includes(part.toLowerCase()) : text.includes(part);
}

function convert(v: unknown, to: "double" | "string" | "int" | "bool" | "exists"): unknown {
  switch (to) {
    case "exists":
      return v !== undefined && v !== null;
    case "double":
    case "int": {
      const n = typeof v === "number" ? v : typeof v === "boolean" ? Number(v) : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
      if (!Number.isFinite(n)) return null;
      return to === "int" ? Math.trunc(n) : n;
    }
    case "string":
      return v === undefined || v === null ? null : typeof v === "string" ? v : JSON.stringify(v);
    case "bool":
      return v === true || v === "true" || (typeof v === "number" && v !== 0);
  }
}

function equal(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b && a !== undefined;
  if (typeof a === "number" && typeof b === "number") return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}

function compare(a: unknown, b: unknown, test: (c: number) => boolean): boolean {
  if (typeof a === "number" && typeof b === "number") return test(a - b);
  if (typeof a === "string" && typeof b === "string") return test(a < b ? -1 : a > b ? 1 : 0);
  return false;
}
