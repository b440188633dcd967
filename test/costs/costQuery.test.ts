import { describe, expect, it } from "vitest";
import { costQuery } from "../../services/store/costs/costsQuery.js";
import { COST_QUERY_FIELDS } from "../../services/store/costs/recordFields.js";
import { compileQuery } from "../../services/store/expr/compile.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { InvalidQueryError, InvalidFieldError } from "../../services/errors.js";

/** Cost record queries through the one query compiler (strict fields): exact SQL and parameters. */

const compile = (expr: unknown) => {
  const pb = new ParamBuilder();
  const sql = compileQuery({ $expr: expr } as never, COST_QUERY_FIELDS, pb);
  return { sql, params: pb.params };
};
const f = (name: string) => ({ $getField: name });
const l = (value: unknown) => ({ $literal: value });

describe("cost record query", () => {
  it("binds every literal with the field's type", () => {
    expect(compile({ $and: [{ $eq: [f("llm_id"), l("gpt-4o")] }, { $gt: [f("prompt_token_cost"), l(0.5)] }, { $gte: [f("effective_date"), l("2025-01-01T00:00:00Z")] }] })).toEqual({
      sql: "((llm_id = {pb_0:String}) AND (prompt_token_cost > {pb_1:Float64}) AND (effective_date >= {pb_2:Int64}))",
      params: {
        pb_0: { type: "String", value: "gpt-4o" },
        pb_1: { type: "Float64", value: 0.5 },
        pb_2: { type: "Int64", value: Date.UTC(2025, 0, 1) * 1000 },
      },
    });
  });

  it("compiles $in, $not, $contains, literal on the left, field against field, $convert", () => {
    expect(compile({ $in: [f("id"), [l("a"), l("b")]] }).sql).toBe("((id = {pb_0:String}) OR (id = {pb_1:String}))");
    expect(compile({ $in: [f("id"), []] }).sql).toBe("0");
    expect(compile({ $not: [{ $eq: [l(1.5), f("completion_token_cost")] }] }).sql).toBe("(NOT ({pb_0:Float64} = completion_token_cost))");
    expect(compile({ $contains: { input: f("provider_id"), substr: l("Ai"), case_insensitive: true } }).sql).toBe("(positionCaseInsensitiveUTF8(provider_id, {pb_0:String}) > 0)");
    expect(compile({ $gt: [f("completion_token_cost"), f("prompt_token_cost")] }).sql).toBe("(completion_token_cost > prompt_token_cost)");
    expect(compile({ $eq: [{ $convert: { input: f("prompt_token_cost"), to: "int" } }, l(0)] }).sql).toBe("(toInt64(prompt_token_cost) = {pb_0:Float64})");
    expect(compile({ $eq: [f("llm_id"), l(null)] })).toEqual({ sql: "(llm_id IS NULL)", params: {} });
  });

  it("refuses unknown fields and ill-typed comparisons", () => {
    expect(() => compile({ $eq: [f("summary.usage"), l(1)] })).toThrow(InvalidFieldError);
    expect(() => compile({ $gt: [f("llm_id"), l(1)] })).toThrow(InvalidQueryError);
    expect(() => compile({ $eq: [f("prompt_token_cost"), l("1")] })).toThrow(InvalidQueryError);
    expect(() => compile({ $gt: [f("llm_id"), f("prompt_token_cost")] })).toThrow(InvalidQueryError);
    expect(() => compile({ $and: [f("llm_id")] })).toThrow(InvalidQueryError);
    expect(() => compile({ $contains: { input: f("prompt_token_cost"), substr: l("1") } })).toThrow(InvalidQueryError);
    expect(() => compile({ $eq: [{ $convert: { input: f("llm_id"), to: "double" } }, l(1)] })).toThrow(InvalidQueryError);
  });
});

describe("cost record query: forms the one compiler gives every field", () => {
  it("converts effective_date to seconds, numbers to themselves, and reads literals as conditions", () => {
    expect(compile({ $gte: [{ $convert: { input: f("effective_date"), to: "int" } }, l(1735689600)] }).sql).toBe("(intDiv(effective_date, 1000000) >= {pb_0:Float64})");
    expect(compile({ $gt: [{ $convert: { input: f("prompt_token_cost"), to: "double" } }, l(1)] }).sql).toBe("(toFloat64(prompt_token_cost) > {pb_0:Float64})");
    expect(compile({ $and: [{ $convert: { input: f("llm_id"), to: "exists" } }] }).sql).toBe("(llm_id IS NOT NULL)");
    expect(compile({ $or: [l(false), l(1)] })).toEqual({
      sql: "(({pb_0:Int64} = 1) OR ({pb_1:Int64} = 1))",
      params: { pb_0: { type: "Int64", value: 0 }, pb_1: { type: "Int64", value: 1 } },
    });
  });
});

describe("costQuery", () => {
  it("reads the project's current prices, filters, sorts with id as the tie-break, pages", () => {
    const q = costQuery({ projectId: "acme/p", query: { $expr: { $eq: [f("llm_id"), l("m")] } } as never, sortBy: [{ field: "prompt_token_cost", direction: "desc" }], limit: 10, offset: 5 });
    expect(q.sql).toContain("FROM llm_token_prices WHERE project_id = {pb_0:String}");
    expect(q.sql).toContain("argMax(deleted, version) AS deleted_");
    expect(q.sql).toContain("WHERE (llm_id = {pb_1:String})\nORDER BY prompt_token_cost DESC NULLS LAST, id ASC\nLIMIT {pb_2:UInt64}, {pb_3:UInt64}");
    expect(q.params).toEqual({
      pb_0: { type: "String", value: "acme/p" },
      pb_1: { type: "String", value: "m" },
      pb_2: { type: "UInt64", value: 5 },
      pb_3: { type: "UInt64", value: 10 },
    });
    expect(costQuery({ projectId: "acme/p" }).sql).toContain("WHERE 1\nORDER BY llm_id ASC NULLS LAST, effective_date DESC NULLS LAST, id ASC\n");
  });
});
