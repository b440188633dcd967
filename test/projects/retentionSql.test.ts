import { describe, expect, it } from "vitest";
import { whereClause } from "../../services/store/calls/callsQuery.js";
import { feedbackSelectQuery } from "../../services/store/feedback/feedbackQuery.js";
import { forSpansQuery } from "../../services/store/otelLogs/otelLogsRepository.js";
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
