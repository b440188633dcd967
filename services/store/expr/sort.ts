import { InvalidFieldError } from "../../errors.js";
import type { ParamBuilder } from "../sql.js";
import type { FieldScope, Fields } from "./fields.js";

export type SortDirection = "asc" | "desc";

export interface Sort {
  readonly field: string;
  readonly direction: SortDirection;
}

/**
 * ORDER BY terms for sort fields, in order. NULLs (absent leaves, running latency) come
 * last in both directions. A JSON leaf sorts numerically first (numbers before text), then
 * as text. Tie-breaks are the caller's.
 */
export function orderByTerms(sorts: readonly Sort[], fields: Fields, pb: ParamBuilder, scope: FieldScope = {}): string[] {
  return sorts.flatMap((sort) => sortTerms(sort, fields, pb, scope));
}

function sortTerms({ field: path, direction }: Sort, fields: Fields, pb: ParamBuilder, scope: FieldScope): string[] {
  if (direction !== "asc" && direction !== "desc") {
    throw new InvalidFieldError(`sort direction must be "asc" or "desc", got ${JSON.stringify(direction)}`);
  }
  const field = fields.field(path, pb, scope);
  const dir = direction === "asc" ? "ASC" : "DESC";
  if (field.kind === "json_leaf") return [`toFloat64OrNull(${field.sql}) ${dir} NULLS LAST`, `${field.sql} ${dir} NULLS LAST`];
  return [`${field.sql} ${dir} NULLS LAST`];
}
