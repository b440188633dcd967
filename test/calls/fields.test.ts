import { describe, expect, it } from "vitest";
import { CALLS_QUERY_FIELDS } from "../../services/store/calls/queryFields.js";
import { orderByTerms, type SortDirection } from "../../services/store/expr/sort.js";
import { ParamBuilder, type SqlParam } from "../../services/store/sql.js";
import { InvalidFieldError } from "../../services/errors.js";

/** The fields a calls query may name, and their ORDER BY terms: exact SQL and parameters. */

const leaf = (n: number): string => `if(indexOf(json_paths, {pb_${n}:String}) = 0, NULL, json_values[indexOf(json_paths, {pb_${n}:String})])`;
const str = (value: string): SqlParam => ({ type: "String", value });
const resolveCallField = (path: string, pb: ParamBuilder) => CALLS_QUERY_FIELDS.field(path, pb);
const sortExpressions = (field: string, direction: SortDirection, pb: ParamBuilder) => orderByTerms([{ field, direction }], CALLS_QUERY_FIELDS, pb);

describe("call fields", () => {
  it("resolves columns, computed fields and JSON leaves", () => {
    const pb = new ParamBuilder();
    expect(resolveCallField("started_at", pb)).toEqual({ sql: "started_at", kind: "datetime", nullable: false });
    expect(resolveCallField("wb_run_step", pb)).toEqual({ sql: "wb_run_step", kind: "number", nullable: true });
    // The display name when set, else the op's name from an op ref (computedFields.ts), else op_name.
    const traceName = resolveCallField("summary.weave.trace_name", pb);
    expect(traceName).toMatchObject({ kind: "string", nullable: false });
    expect(traceName.sql).toMatch(/^ifNull\(nullIf\(display_name, ''\), .*\[extract\(op_name, '\^weave:\/\/\/\[\^\/\]\+\/\[\^\/\]\+\/op\/\(\[\^:\]\+\):'\)\]/);
    expect(resolveCallField("output", pb)).toEqual({
      sql: "if(indexOf(json_paths, {pb_0:String}) = 0, output, json_values[indexOf(json_paths, {pb_0:String})])",
      kind: "json_leaf",
      nullable: true,
      exactEquals: expect.any(Function),
    });
    expect(resolveCallField("attributes.gen_ai.system", pb).kind).toBe("json_leaf");
    expect(pb.params).toEqual({ pb_0: str("output"), pb_1: str("attributes.gen_ai.system") });
    expect(() => resolveCallField("storage_size_bytes", pb)).toThrow(InvalidFieldError);
    expect(() => resolveCallField("json_values", pb)).toThrow(InvalidFieldError);
    expect(() => resolveCallField(`inputs.${Array(13).fill("a").join(".")}`, pb)).toThrow(/deeper/);
    expect(() => resolveCallField(`inputs.${Array(12).fill("a").join(".")}`, pb)).not.toThrow();
  });

  it("gives ORDER BY terms, NULLs last; JSON leaves numeric first, then text", () => {
    const pb = new ParamBuilder();
    expect(sortExpressions("started_at", "desc", pb)).toEqual(["started_at DESC NULLS LAST"]);
    expect(sortExpressions("summary.weave.latency_ms", "asc", pb)).toEqual(["intDiv(ended_at - started_at, 1000) ASC NULLS LAST"]);
    expect(sortExpressions("inputs.n", "asc", pb)).toEqual([`toFloat64OrNull(${leaf(0)}) ASC NULLS LAST`, `${leaf(0)} ASC NULLS LAST`]);
    expect(pb.params).toEqual({ pb_0: str("inputs.n") });
    expect(() => sortExpressions("started_at", "up" as "asc", pb)).toThrow(InvalidFieldError);
    expect(() => sortExpressions("bogus", "asc", pb)).toThrow(InvalidFieldError);
  });

  it("leaves summary.weave to the computed and cost fields; an unknown one lists what is known", () => {
    const pb = new ParamBuilder();
    expect(resolveCallField("summary.weave.costs_total", pb)).toMatchObject({ kind: "number", nullable: false });
    expect(resolveCallField("summary.weave.costs.gpt-4o.prompt_tokens_total_cost", pb)).toMatchObject({ kind: "number", nullable: true });
    expect(resolveCallField("summary.usage.gpt-4o.prompt_tokens", pb).kind).toBe("json_leaf");
    const unknown = () => resolveCallField("summary.weave.bogus", new ParamBuilder());
    expect(unknown).toThrow(InvalidFieldError);
    expect(unknown).toThrow(/^unknown field: summary\.weave\.bogus \(known: id, .*summary\.weave\.status, .*inputs\.<path>, .*summary\.weave\.costs_total, .*feedback\.\[<feedback_type>\]/);
    expect(() => resolveCallField("summary.weave.costs.gpt-4o.bogus", new ParamBuilder())).toThrow(/unknown cost field/);
  });
});
