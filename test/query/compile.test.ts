import { describe, expect, it } from "vitest";
import { QuerySchema, type Operation } from "../../services/contract/queryExpr.js";
import { CALLS_QUERY_FIELDS } from "../../services/store/calls/queryFields.js";
import { countSql } from "../../services/store/costs/counts.js";
import { toMicros } from "../../services/store/expr/compare.js";
import { compileQuery } from "../../services/store/expr/compile.js";
import { columnFields, composeFields, jsonLeafFields } from "../../services/store/expr/fields.js";
import { ParamBuilder, type SqlParam } from "../../services/store/sql.js";
import { InvalidQueryError, InvalidFieldError } from "../../services/errors.js";

const leaf = (n: number): string => `if(indexOf(json_paths, {pb_${n}:String}) = 0, NULL, json_values[indexOf(json_paths, {pb_${n}:String})])`;
const str = (value: string): SqlParam => ({ type: "String", value });
const f64 = (value: number): SqlParam => ({ type: "Float64", value });
const i64 = (value: number): SqlParam => ({ type: "Int64", value });

function compile(expr: Operation): { sql: string; params: Readonly<Record<string, SqlParam>> } {
  const pb = new ParamBuilder();
  const sql = compileQuery({ $expr: expr }, CALLS_QUERY_FIELDS, pb);
  return { sql, params: pb.params };
}

const field = (path: string) => ({ $getField: path });
const lit = (value: string | number | boolean | null | object) => ({ $literal: value }) as { $literal: never };

describe("compileQuery: exact SQL and parameters", () => {
  it("$eq with a string literal compares a JSON leaf as text", () => {
    expect(compile({ $eq: [field("inputs.a.b"), lit("x")] })).toEqual({
      sql: `ifNull(${leaf(0)} = {pb_1:String}, 0)`,
      params: { pb_0: str("inputs.a.b"), pb_1: str("x") },
    });
  });

  it("$eq with a number literal reads the leaf as a number", () => {
    expect(compile({ $eq: [field("inputs.n"), lit(5)] })).toEqual({
      sql: `ifNull(toFloat64OrNull(${leaf(0)}) = {pb_1:Float64}, 0)`,
      params: { pb_0: str("inputs.n"), pb_1: f64(5) },
    });
  });

  it("$eq with a bool literal compares the leaf with true/false, numeric fields with 1/0", () => {
    expect(compile({ $eq: [field("inputs.ok"), lit(true)] })).toEqual({
      sql: `ifNull(${leaf(0)} = {pb_1:String}, 0)`,
      params: { pb_0: str("inputs.ok"), pb_1: str("true") },
    });
    expect(compile({ $eq: [field("wb_run_step"), lit(false)] })).toEqual({
      sql: "ifNull(wb_run_step = {pb_0:Int64}, 0)",
      params: { pb_0: i64(0) },
    });
  });

  it("$eq with null is IS NULL; a JSON leaf also matches the JSON null", () => {
    expect(compile({ $eq: [field("ended_at"), lit(null)] })).toEqual({ sql: "(ended_at IS NULL)", params: {} });
    expect(compile({ $eq: [lit(null), field("output.x")] })).toEqual({
      sql: `(${leaf(0)} IS NULL OR ${leaf(0)} = 'null')`,
      params: { pb_0: str("output.x") },
    });
  });

  it("$eq on a non-null column is not wrapped; a literal on the left stays on the left", () => {
    expect(compile({ $eq: [lit("abc"), field("op_name")] })).toEqual({ sql: "({pb_0:String} = op_name)", params: { pb_0: str("abc") } });
  });

  it("$eq with a string literal on a numeric field compares text", () => {
    expect(compile({ $eq: [field("wb_run_step"), lit("7")] })).toEqual({
      sql: "ifNull(toString(wb_run_step) = {pb_0:String}, 0)",
      params: { pb_0: str("7") },
    });
  });

  it("$eq with an object literal compares JSON text", () => {
    expect(compile({ $eq: [field("inputs.obj"), lit({})] })).toEqual({
      sql: `ifNull(${leaf(0)} = {pb_1:String}, 0)`,
      params: { pb_0: str("inputs.obj"), pb_1: str("{}") },
    });
  });

  it("datetime fields take seconds or ISO 8601, bound as µs", () => {
    expect(compile({ $gt: [field("started_at"), lit(1767225600.5)] })).toEqual({
      sql: "(started_at > {pb_0:Int64})",
      params: { pb_0: i64(1767225600500000) },
    });
    expect(compile({ $gte: [field("ended_at"), lit("2026-01-01T00:00:00.000001Z")] })).toEqual({
      sql: "ifNull(ended_at >= {pb_0:Int64}, 0)",
      params: { pb_0: i64(1767225600000001) },
    });
    expect(compile({ $gt: [lit("2026-01-01T01:00:00+01:00"), field("started_at")] })).toEqual({
      sql: "({pb_0:Int64} > started_at)",
      params: { pb_0: i64(1767225600000000) },
    });
  });

  it("$gt is numeric when either side is numeric, text otherwise", () => {
    expect(compile({ $gt: [field("output.score"), lit(0.5)] })).toEqual({
      sql: `ifNull(toFloat64OrNull(${leaf(0)}) > {pb_1:Float64}, 0)`,
      params: { pb_0: str("output.score"), pb_1: f64(0.5) },
    });
    expect(compile({ $gt: [field("summary.weave.latency_ms"), lit("100")] })).toEqual({
      sql: "ifNull(intDiv(ended_at - started_at, 1000) > toFloat64OrNull({pb_0:String}), 0)",
      params: { pb_0: str("100") },
    });
    expect(compile({ $gte: [field("op_name"), lit("m")] })).toEqual({ sql: "(op_name >= {pb_0:String})", params: { pb_0: str("m") } });
  });

  it("two fields: numeric if either is numeric", () => {
    expect(compile({ $gte: [field("wb_run_step_end"), field("inputs.step")] })).toEqual({
      sql: `ifNull(wb_run_step_end >= toFloat64OrNull(${leaf(0)}), 0)`,
      params: { pb_0: str("inputs.step") },
    });
    expect(compile({ $gt: [field("ended_at"), field("started_at")] })).toEqual({ sql: "ifNull(ended_at > started_at, 0)", params: {} });
  });

  it("$in is $eq against each operand, OR-ed; the field is rendered once", () => {
    expect(compile({ $in: [field("inputs.k"), [lit("a"), lit(2)]] })).toEqual({
      sql: `(ifNull(${leaf(0)} = {pb_1:String}, 0) OR ifNull(toFloat64OrNull(${leaf(0)}) = {pb_2:Float64}, 0))`,
      params: { pb_0: str("inputs.k"), pb_1: str("a"), pb_2: f64(2) },
    });
    expect(compile({ $in: [field("id"), []] })).toEqual({ sql: "0", params: {} });
  });

  it("$contains uses positionUTF8 or positionCaseInsensitiveUTF8", () => {
    expect(compile({ $contains: { input: field("op_name"), substr: lit("pred") } })).toEqual({
      sql: "(positionUTF8(op_name, {pb_0:String}) > 0)",
      params: { pb_0: str("pred") },
    });
    expect(compile({ $contains: { input: field("inputs.q"), substr: lit("Ü"), case_insensitive: true } })).toEqual({
      sql: `ifNull(positionCaseInsensitiveUTF8(${leaf(0)}, {pb_1:String}) > 0, 0)`,
      params: { pb_0: str("inputs.q"), pb_1: str("Ü") },
    });
  });

  it("$and, $or, $not compose; one operand is not wrapped", () => {
    expect(
      compile({
        $or: [
          { $and: [{ $eq: [field("id"), lit("a")] }] },
          { $not: [{ $eq: [field("summary.weave.status"), lit("error")] }] },
        ],
      }),
    ).toEqual({
      sql:
        "((id = {pb_0:String}) OR (NOT (multiIf(ended_at IS NULL, 'running', exception IS NOT NULL, 'error', " +
        `ifNull(${countSql(leaf(1))}, 0) > 0, 'descendant_error', 'success') = {pb_2:String})))`,
      params: { pb_0: str("a"), pb_1: str("summary.status_counts.error"), pb_2: str("error") },
    });
  });

  it("$convert renders the conversion; exists is IS NOT NULL", () => {
    expect(compile({ $gte: [{ $convert: { input: field("output.score"), to: "double" } }, lit(0.5)] })).toEqual({
      sql: `ifNull(toFloat64OrNull(${leaf(0)}) >= {pb_1:Float64}, 0)`,
      params: { pb_0: str("output.score"), pb_1: f64(0.5) },
    });
    expect(compile({ $eq: [{ $convert: { input: field("inputs.n"), to: "int" } }, lit(3)] })).toEqual({
      sql: `ifNull(toInt64OrNull(${leaf(0)}) = {pb_1:Float64}, 0)`,
      params: { pb_0: str("inputs.n"), pb_1: f64(3) },
    });
    expect(compile({ $not: [{ $convert: { input: field("output.x"), to: "exists" } }] })).toEqual({
      sql: `(NOT (${leaf(0)} IS NOT NULL))`,
      params: { pb_0: str("output.x") },
    });
    expect(compile({ $and: [{ $convert: { input: field("inputs.flag"), to: "bool" } }, field("inputs.other")] })).toEqual({
      sql:
        `(ifNull(multiIf(${leaf(0)} IN ('true', '1'), 1, ${leaf(0)} IN ('false', '0'), 0, NULL), 0) AND ` +
        `ifNull(multiIf(${leaf(1)} IN ('true', '1'), 1, ${leaf(1)} IN ('false', '0'), 0, NULL), 0))`,
      params: { pb_0: str("inputs.flag"), pb_1: str("inputs.other") },
    });
  });

  it("a literal in a boolean position is bound as 1 or 0", () => {
    expect(compile({ $and: [lit(true), lit("x")] })).toEqual({
      sql: "(({pb_0:Int64} = 1) AND ({pb_1:Int64} = 1))",
      params: { pb_0: i64(1), pb_1: i64(0) },
    });
  });

  it("never puts a value into the SQL text", () => {
    const evil = "x') OR 1=1 OR ('";
    const { sql, params } = compile({ $or: [{ $eq: [field("inputs.a"), lit(evil)] }, { $contains: { input: field("id"), substr: lit(evil) } }] });
    expect(sql).not.toContain("OR 1=1");
    expect(Object.values(params).filter((p) => p.value === evil)).toHaveLength(2);
  });
});

describe("compileQuery: refused expressions", () => {
  const refuse = (expr: unknown, error: typeof InvalidQueryError | typeof InvalidFieldError, message?: RegExp) => {
    const run = () => compileQuery({ $expr: expr as Operation }, CALLS_QUERY_FIELDS, new ParamBuilder());
    expect(run).toThrow(error);
    if (message) expect(run).toThrow(message);
  };

  it("unknown fields", () => {
    refuse({ $eq: [field("nope"), lit(1)] }, InvalidFieldError, /unknown field/);
    refuse({ $eq: [field("summary.weave.costs"), lit(1)] }, InvalidFieldError);
    refuse({ $eq: [field("inputs.a'b"), lit(1)] }, InvalidFieldError);
    refuse({ $eq: [field("inputs..b"), lit(1)] }, InvalidFieldError);
    refuse({ $eq: [field("inputs.`x`"), lit(1)] }, InvalidFieldError);
  });

  it("structurally invalid combinations", () => {
    refuse({ $gt: [field("inputs.a"), lit(null)] }, InvalidQueryError, /number or string/);
    refuse({ $gt: [field("inputs.a"), lit(true)] }, InvalidQueryError);
    refuse({ $eq: [field("started_at"), lit("yesterday")] }, InvalidQueryError, /ISO 8601/);
    refuse({ $eq: [field("started_at"), lit("2026-02-30T00:00:00Z")] }, InvalidQueryError, /valid datetime/);
    refuse({ $eq: [field("started_at"), field("inputs.t")] }, InvalidQueryError, /datetime/);
    refuse({ $eq: [field("wb_run_step"), lit([1])] }, InvalidQueryError);
    refuse({ $eq: [lit(1), lit("1")] }, InvalidQueryError, /literal/);
    refuse({ $contains: { input: field("id"), substr: lit(5) } }, InvalidQueryError, /must be a string/);
    refuse({ $contains: { input: field("started_at"), substr: lit("5") } }, InvalidQueryError);
    refuse({ $and: [] }, InvalidQueryError);
    refuse({ $and: [field("started_at")] }, InvalidQueryError);
    refuse({ $and: [lit({ a: 1 })] }, InvalidQueryError);
    let deep: Operation = { $eq: [field("id"), lit("x")] };
    for (let i = 0; i < 100; i++) deep = { $not: [deep] };
    refuse(deep, InvalidQueryError, /deeper/);
  });
});

describe("compileQuery: strict fields", () => {
  // A typed record: strict columns, and lenient JSON leaves beside them.
  const RECORD = composeFields(
    columnFields("record", { name: { kind: "string", nullable: false }, price: { kind: "number", nullable: false }, at: { kind: "datetime", nullable: false } }, { strict: true }),
    jsonLeafFields("record leaves", { roots: ["extra"], paths: "extra_paths", values: "extra_values", maxDepth: 4 }),
  );
  const strictCompile = (expr: unknown) => {
    const pb = new ParamBuilder();
    return { sql: compileQuery({ $expr: expr as Operation }, RECORD, pb), params: pb.params };
  };
  const extra = (n: number) => `if(indexOf(extra_paths, {pb_${n}:String}) = 0, NULL, extra_values[indexOf(extra_paths, {pb_${n}:String})])`;

  it("compiles what it accepts exactly as for any field", () => {
    expect(strictCompile({ $and: [{ $eq: [field("name"), lit("m")] }, { $gte: [field("price"), lit(0.5)] }, { $gt: [field("at"), lit(1767225600)] }] })).toEqual({
      sql: "((name = {pb_0:String}) AND (price >= {pb_1:Float64}) AND (at > {pb_2:Int64}))",
      params: { pb_0: str("m"), pb_1: f64(0.5), pb_2: i64(1767225600000000) },
    });
    expect(strictCompile({ $eq: [field("name"), lit(null)] })).toEqual({ sql: "(name IS NULL)", params: {} });
    expect(strictCompile({ $eq: [field("name"), field("extra.label")] }).sql).toBe(`ifNull(name = ${extra(0)}, 0)`);
    expect(strictCompile({ $contains: { input: field("name"), substr: lit("x") } }).sql).toBe("(positionUTF8(name, {pb_0:String}) > 0)");
    expect(strictCompile({ $eq: [{ $convert: { input: field("price"), to: "int" } }, lit(3)] }).sql).toBe("(toInt64(price) = {pb_0:Float64})");
    expect(strictCompile({ $gte: [{ $convert: { input: field("at"), to: "int" } }, lit(1767225600)] }).sql).toBe("(intDiv(at, 1000000) >= {pb_0:Float64})");
    expect(strictCompile({ $not: [{ $convert: { input: field("name"), to: "exists" } }] }).sql).toBe("(NOT (name IS NOT NULL))");
    // The leaves beside them stay lenient.
    expect(strictCompile({ $gt: [field("extra.n"), lit(2)] }).sql).toBe(`ifNull(toFloat64OrNull(${extra(0)}) > {pb_1:Float64}, 0)`);
  });

  it("refuses to read a strict field as another kind", () => {
    const refused = [
      { $gt: [field("name"), lit(3)] },
      { $eq: [field("price"), lit("3")] },
      { $eq: [field("name"), lit(true)] },
      { $eq: [field("price"), lit(false)] },
      { $eq: [field("name"), lit({})] },
      { $in: [field("price"), [lit(1), lit("2")]] },
      { $gt: [field("name"), field("price")] },
      { $eq: [field("price"), field("extra.n")] },
      { $and: [field("name")] },
      { $not: [field("price")] },
      { $contains: { input: field("price"), substr: lit("1") } },
      { $contains: { input: field("extra.s"), substr: field("price") } },
      { $eq: [{ $convert: { input: field("name"), to: "double" } }, lit(1)] },
      { $eq: [{ $convert: { input: field("price"), to: "string" } }, lit("1")] },
      { $and: [{ $convert: { input: field("price"), to: "bool" } }] },
      { $eq: [{ $convert: { input: field("price"), to: "int" } }, lit("1")] },
      { $eq: [field("at"), lit(true)] },
    ];
    for (const expr of refused) expect(() => strictCompile(expr), JSON.stringify(expr)).toThrow(InvalidQueryError);
  });
});

describe("datetime literals", () => {
  it("reads ISO 8601 forms to µs", () => {
    expect(toMicros("2026-01-01T00:00:00Z")).toBe(1767225600000000);
    expect(toMicros("2026-01-01T00:00:00.123456Z")).toBe(1767225600123456);
    expect(toMicros("2026-01-01T00:00:00.1234569Z")).toBe(1767225600123456);
    expect(toMicros("2026-01-01 00:00:00")).toBe(1767225600000000);
    expect(toMicros("2026-01-01")).toBe(1767225600000000);
    expect(toMicros("2026-01-01T05:30:00+05:30")).toBe(1767225600000000);
    expect(toMicros("2025-12-31T19:00:00-0500")).toBe(1767225600000000);
    expect(toMicros(1767225600.123456)).toBe(1767225600123456);
  });
});

describe("QuerySchema", () => {
  it("accepts every operator and the shape the interface shows", () => {
    const ok = [
      { $expr: { $and: [{ $literal: "x" }] } },
      {
        $expr: {
          $or: [
            { $eq: [{ $getField: "inputs.a" }, { $literal: { nested: [1, null, true] } }] },
            { $not: [{ $gt: [{ $convert: { input: { $getField: "output.s" }, to: "double" } }, { $literal: 1 }] }] },
            { $gte: [{ $getField: "started_at" }, { $literal: "2026-01-01T00:00:00Z" }] },
            { $in: [{ $getField: "id" }, [{ $literal: "a" }, { $literal: "b" }]] },
            { $contains: { input: { $getField: "op_name" }, substr: { $literal: "x" }, case_insensitive: true } },
            { $eq: [{ $literal: null }, { $getField: "ended_at" }] },
          ],
        },
      },
    ];
    for (const q of ok) expect(QuerySchema.safeParse(q).success).toBe(true);
  });

  it("refuses unknown operators, two operators in one node, wrong arity, deep nesting", () => {
    const bad = [
      {},
      { $expr: { $regex: [] } },
      { $expr: { $eq: [{ $getField: "id" }, { $literal: 1 }], $gt: [{ $getField: "id" }, { $literal: 1 }] } },
      { $expr: { $eq: [{ $getField: "id" }] } },
      { $expr: { $not: [] } },
      { $expr: { $and: [] } },
      { $expr: { $eq: [{ $getField: "id" }, { $literal: 1, extra: 1 }] } },
      { $expr: { $eq: [{ $getField: "id" }, {}] } },
      { $expr: { $eq: [{ $convert: { input: { $getField: "id" }, to: "date" } }, { $literal: 1 }] } },
      { $expr: { $contains: { input: { $getField: "id" } } } },
    ];
    for (const q of bad) expect(QuerySchema.safeParse(q).success, JSON.stringify(q)).toBe(false);

    let deep: unknown = { $eq: [{ $getField: "id" }, { $literal: 1 }] };
    for (let i = 0; i < 20_000; i++) deep = { $not: [deep] };
    const result = QuerySchema.safeParse({ $expr: deep });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/deeper/);
  });
});
