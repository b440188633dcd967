import type { z } from "zod";
import { ValidationError, type ValidationIssue } from "../errors.js";
import { isJsonObject } from "../json.js";

/** zod issues → the `detail` shape, with `loc` starting at the request part ("body"). */
export function toValidationError(error: z.ZodError, where: string): ValidationError {
  const detail: ValidationIssue[] = error.issues.map((issue) => ({
    loc: [where, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
  return new ValidationError(detail);
}

const MAX_DEPTH = 4;

/**
 * Fields the client sent that the schema does not know (zod strips them): reported so that
 * a typo is visible, without rejecting newer clients. Looks a few levels deep only.
 */
export function ignoredFields(input: unknown, parsed: unknown, path = "", depth = 0): string[] {
  if (depth >= MAX_DEPTH) return [];
  if (Array.isArray(input) && Array.isArray(parsed)) {
    const sample = Math.min(input.length, parsed.length, 3);
    const found = new Set<string>();
    for (let i = 0; i < sample; i++) for (const f of ignoredFields(input[i], parsed[i], `${path}[]`, depth + 1)) found.add(f);
    return [...found];
  }
  if (!isJsonObject(input) || !isJsonObject(parsed)) return [];
  const out: string[] = [];
  for (const key of Object.keys(input)) {
    const at = path ? `${path}.${key}` : key;
    if (!(key in parsed)) out.push(at);
    else out.push(...ignoredFields(input[key], parsed[key], at, depth + 1));
  }
  return out;
}
