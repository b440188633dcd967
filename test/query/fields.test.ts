import { describe, expect, it } from "vitest";
import { InvalidFieldError } from "../../services/errors.js";
import { columnFields, composeFields, jsonLeafFields, keyPathSegments, namedFields, type FieldSet } from "../../services/store/expr/fields.js";
import { orderByTerms } from "../../services/store/expr/sort.js";
import { ParamBuilder, type SqlParam } from "../../services/store/sql.js";

/** The field model: composition, the JSON-leaf factory, key paths, ORDER BY terms. */

const str = (value: string): SqlParam => ({ type: "String", value });
const leafOver = (paths: string, values: string, n: number) =>
  `if(indexOf(${paths}, {pb_${n}:String}) = 0, NULL, ${values}[indexOf(${paths}, {pb_${n}:String})])`;

describe("composeFields", () => {
  const columns = columnFields("columns", { id: { kind: "string", nullable: false }, n: { kind: "number", nullable: true } });
  const shadow = namedFields("shadow", { id: () => ({ sql: "other_id", kind: "string", nullable: false }) });
  const leaves = jsonLeafFields("leaves", { roots: ["data"], paths: "data_paths", values: "data_values", maxDepth: 3 });

  it("asks the sets in order; the first that answers wins", () => {
    const pb = new ParamBuilder();
    expect(composeFields(columns, shadow).field("id", pb)).toEqual({ sql: "id", kind: "string", nullable: false });
    expect(composeFields(shadow, columns).field("id", pb)).toEqual({ sql: "other_id", kind: "string", nullable: false });
    expect(composeFields(shadow, columns).field("n", pb)).toEqual({ sql: "n", kind: "number", nullable: true });
    expect(pb.params).toEqual({});
  });

  it("nests: a composition is a set of its own", () => {
    const inner = composeFields(shadow, leaves);
    const outer = composeFields(columns, inner);
    expect(outer.name).toBe("columns + shadow + leaves");
    expect(outer.known).toEqual(["id", "n", "id", "data.<path>"]);
    expect(outer.field("id", new ParamBuilder()).sql).toBe("id");
    expect(outer.field("data.x", new ParamBuilder()).sql).toBe(leafOver("data_paths", "data_values", 0));
  });

  it("binds parameters only for the set that answers", () => {
    let asked = 0;
    const declining: FieldSet = { name: "declining", known: [], resolve: () => { asked++; return undefined; } };
    const pb = new ParamBuilder();
    pb.str("before");
    expect(composeFields(declining, leaves).field("data.a.b", pb).sql).toBe(leafOver("data_paths", "data_values", 1));
    expect(asked).toBe(1);
    expect(pb.params).toEqual({ pb_0: str("before"), pb_1: str("data.a.b") });
  });

  it("throws one InvalidFieldError listing every known field when no set answers", () => {
    const fields = composeFields(columns, leaves);
    const run = () => fields.field("nope", new ParamBuilder());
    expect(run).toThrow(InvalidFieldError);
    expect(run).toThrow("unknown field: nope (known: id, n, data.<path>)");
    expect(() => fields.field("data", new ParamBuilder())).toThrow("unknown field: data (known:");
    expect(fields.resolve("nope", new ParamBuilder(), {})).toBeUndefined();
    expect(() => fields.field("x".repeat(10_000), new ParamBuilder())).toThrow(`unknown field: ${"x".repeat(200)}… (known:`);
  });

  it("lets a set refuse a path of its own with its own message", () => {
    const fields = composeFields(columns, leaves);
    expect(() => fields.field("data.a'b", new ParamBuilder())).toThrow(/invalid key "a'b" in field path data\.a'b/);
    expect(() => fields.field("data.a.b.c.d", new ParamBuilder())).toThrow(/deeper than 3 keys/);
  });

  it("gives the scope to the sets", () => {
    const scoped = namedFields("scoped", { project: (pb, scope) => ({ sql: pb.str(scope.projectId ?? "none"), kind: "string", nullable: false }) });
    const pb = new ParamBuilder();
    composeFields(scoped).field("project", pb, { projectId: "acme/p" });
    composeFields(scoped).field("project", pb);
    expect(pb.params).toEqual({ pb_0: str("acme/p"), pb_1: str("none") });
  });
});

describe("jsonLeafFields", () => {
  it("renders leaves over the column pair it is given", () => {
    const calls = jsonLeafFields("call leaves", { roots: ["inputs", "output"], paths: "json_paths", values: "json_values", maxDepth: 12 });
    const rows = jsonLeafFields("row leaves", { roots: ["row"], paths: "row_paths", values: "row_values", maxDepth: 2 });
    const pb = new ParamBuilder();
    expect(calls.resolve("inputs.messages.0.content", pb, {})).toEqual({ sql: leafOver("json_paths", "json_values", 0), kind: "json_leaf", nullable: true });
    expect(rows.resolve("row.score", pb, {})).toEqual({ sql: leafOver("row_paths", "row_values", 1), kind: "json_leaf", nullable: true });
    expect(rows.leafSql("row.a.b", pb)).toBe(leafOver("row_paths", "row_values", 2));
    expect(pb.params).toEqual({ pb_0: str("inputs.messages.0.content"), pb_1: str("row.score"), pb_2: str("row.a.b") });
    expect(calls.known).toEqual(["inputs.<path>", "output.<path>"]);
  });

  it("answers only under its roots, not for a bare root nor a reserved subtree", () => {
    const leaves = jsonLeafFields("leaves", { roots: ["summary"], paths: "p", values: "v", maxDepth: 4, reserved: ["summary.weave"] });
    const pb = new ParamBuilder();
    for (const path of ["summary", "summaryx.a", "other.a", "summary.weave", "summary.weave.status"]) {
      expect(leaves.resolve(path, pb, {}), path).toBeUndefined();
    }
    expect(pb.params).toEqual({});
    expect(leaves.resolve("summary.weaver", pb, {})?.kind).toBe("json_leaf");
  });

  it("checks keys with the shared rule and its own depth", () => {
    const shallow = jsonLeafFields("shallow", { roots: ["r"], paths: "p", values: "v", maxDepth: 2 });
    for (const bad of ["r.", "r..a", "r.a.b.c", "r.`x`", "r.a\"b", "r.a\\b", "r.{x}", "r.a\nb"]) {
      expect(() => shallow.resolve(bad, new ParamBuilder(), {}), JSON.stringify(bad)).toThrow(InvalidFieldError);
    }
    expect(shallow.resolve("r.gen_ai-x$@:+/# y.ünï", new ParamBuilder(), {})).toBeDefined();
  });
});

describe("keyPathSegments", () => {
  it("returns the keys, bounds depth and length", () => {
    expect(keyPathSegments("a.b.0", 3)).toEqual(["a", "b", "0"]);
    expect(() => keyPathSegments("a.b.c.d", 3)).toThrow(/deeper than 3 keys/);
    expect(() => keyPathSegments("a", 3, `x.${"a".repeat(1023)}`)).toThrow(/longer than 1024/);
    expect(keyPathSegments("a".repeat(1024), 3)).toHaveLength(1);
  });
});

describe("columnFields", () => {
  it("marks the columns strict when asked", () => {
    const pb = new ParamBuilder();
    expect(columnFields("typed", { price: { kind: "number", nullable: false } }, { strict: true }).resolve("price", pb, {})).toEqual({
      sql: "price",
      kind: "number",
      nullable: false,
      strict: true,
    });
    expect(columnFields("loose", { price: { kind: "number", nullable: false } }).resolve("price", pb, {})).toEqual({ sql: "price", kind: "number", nullable: false });
    expect(columnFields("loose", { price: { kind: "number", nullable: false } }).resolve("toString", pb, {})).toBeUndefined();
  });
});

describe("orderByTerms", () => {
  const fields = composeFields(
    columnFields("columns", { at: { kind: "datetime", nullable: false } }),
    jsonLeafFields("leaves", { roots: ["payload"], paths: "payload_paths", values: "payload_values", maxDepth: 12 }),
  );

  it("sorts each field NULLs last, JSON leaves numeric first, then text", () => {
    const pb = new ParamBuilder();
    const leaf = leafOver("payload_paths", "payload_values", 0);
    expect(orderByTerms([{ field: "payload.score", direction: "desc" }, { field: "at", direction: "asc" }], fields, pb)).toEqual([
      `toFloat64OrNull(${leaf}) DESC NULLS LAST`,
      `${leaf} DESC NULLS LAST`,
      "at ASC NULLS LAST",
    ]);
    expect(pb.params).toEqual({ pb_0: str("payload.score") });
  });

  it("refuses unknown fields and directions", () => {
    expect(() => orderByTerms([{ field: "nope", direction: "asc" }], fields, new ParamBuilder())).toThrow(InvalidFieldError);
    expect(() => orderByTerms([{ field: "at", direction: "up" as "asc" }], fields, new ParamBuilder())).toThrow(InvalidFieldError);
  });
});
