import { describe, expect, it } from "vitest";
import { whereClause } from "../../services/store/calls/callsQuery.js";
import { feedbackSelectQuery } from "../../services/store/feedback/feedbackQuery.js";
import { forSpansQuery } from "../../services/store/otelLogs/otelLogsRepository.js";
import { EXPIRING_TABLES, type TargetScope } from "../../services/store/projects/expiry.js";
import { retentionCutoff } from "../../services/store/projects/retention.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { threadsPageQuery } from "../../services/store/threads/threadsQuery.js";

/** The one retention condition, as each read renders it (exact SQL and parameters). */
describe("the retention cutoff in reads", () => {
  it("is now minus the retention in µs", () => {
    expect(retentionCutoff(30, 100 * 86_400_000_000)).toBe(70 * 86_400_000_000);
  });

  it("adds started_at ≥ cutoff to every calls read, and nothing without a retention", () => {
    const pb = new ParamBuilder();
    expect(whereClause({ projectId: "acme/p", retainedFrom: 123, noDeletions: true }, pb)).toBe("project_id = {pb_0:String}\n  AND started_at >= {pb_1:Int64}");
    expect(pb.params).toEqual({ pb_0: { type: "String", value: "acme/p" }, pb_1: { type: "Int64", value: 123 } });
    expect(whereClause({ projectId: "acme/p", retainedFrom: null, noDeletions: true }, new ParamBuilder())).toBe("project_id = {pb_0:String}");
  });

  it("keeps threads last updated from the cutoff on", () => {
    const q = threadsPageQuery({ projectId: "acme/p", retainedFrom: 123 });
    expect(q.sql).toContain("WHERE project_id = {pb_0:String}\n  AND turn_count > 0\n  AND last_updated >= {pb_1:Int64}");
    expect(q.params.pb_1).toEqual({ type: "Int64", value: 123 });
  });

  it("leaves out feedback on calls that started before the cutoff", () => {
    const q = feedbackSelectQuery({ projectId: "acme/p", retainedFrom: 123 });
    expect(q.sql).toContain(
      "WHERE project_id = {pb_0:String}\n  AND deleted = 0\n  AND call_id NOT IN (SELECT id FROM call_index WHERE project_id = {pb_0:String} AND started_at < {pb_1:Int64})",
    );
    expect(q.params.pb_1).toEqual({ type: "Int64", value: 123 });
  });

  it("leaves out OTLP log records older than the cutoff", () => {
    const q = forSpansQuery("acme/p", ["s1"], false, 123);
    expect(q.sql).toContain("AND time >= {pb_4:Int64}");
    expect(q.params.pb_4).toEqual({ type: "Int64", value: 123 });
    expect(forSpansQuery("acme/p", ["s1"], false, null).sql).not.toContain("time >=");
  });
});

/** What the retention job deletes of what only expired calls reference (expiry.ts), as each mutation's condition reads. */
describe("the retention job's conditions on referenced objects, tables and files", () => {
  const scope: TargetScope = { project: "P", cutoff: "C", targets: "T", ref: (table) => `db.${table}_local` };
  const condition = (table: string) => EXPIRING_TABLES.find((t) => t.table === table)!.expired(scope);
  const RETAINED = "(SELECT target FROM db.call_ref_bounds_local WHERE project_id = P AND started_at >= C)";

  it("deletes an object, table or file among the expired targets that no call from the cutoff on references", () => {
    expect(condition("objects")).toBe(`has(T, concat('object/', object_id, ':', digest)) AND concat('object/', object_id, ':', digest) NOT IN ${RETAINED}`);
    expect(condition("tables")).toBe(`has(T, concat('table/', digest)) AND concat('table/', digest) NOT IN ${RETAINED}`);
    expect(condition("files")).toBe(`has(T, concat('file/', digest)) AND concat('file/', digest) NOT IN ${RETAINED}`);
  });

  it("deletes the rows of tables that only expired tables hold, testing the retained targets once", () => {
    const rows = condition("table_rows");
    expect(rows.replace(/\s+/g, " ")).toBe(
      "row_key IN (SELECT row_key FROM db.table_positions_local WHERE project_id = P AND has(T, concat('table/', table_digest))) " +
        `AND row_key NOT IN (SELECT row_key FROM db.table_positions_local WHERE project_id = P AND (NOT has(T, concat('table/', table_digest)) OR concat('table/', table_digest) IN ${RETAINED}))`,
    );
    expect(rows.split("call_ref_bounds")).toHaveLength(2);
  });

  it("deletes objects last of the targets, and call_ref_bounds after every target", () => {
    const after = (table: string) => EXPIRING_TABLES.find((t) => t.table === table)!.after ?? [];
    expect(after("objects")).toEqual(["tables", "table_positions", "table_rows", "table_row_leaves", "table_row_sort_keys", "files", "file_chunks"]);
    expect(after("table_positions")).toEqual(["tables", "table_rows", "table_row_leaves", "table_row_sort_keys"]);
    expect(after("files")).toEqual(["file_chunks"]);
    expect(after("call_ref_bounds")).toEqual(expect.arrayContaining(["objects", "object_tags", "object_aliases", "tables", "table_positions", "files", "file_chunks"]));
    expect(after("annotation_queue_items")).toEqual(["annotation_progress"]);
  });
});
