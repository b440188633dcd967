import { describe, expect, it } from "vitest";
import { CALL_FEEDBACK_FIELDS } from "../../services/store/feedback/callFields.js";
import { feedbackForCallsQuery, feedbackPurgeQuery, feedbackSelectQuery } from "../../services/store/feedback/feedbackQuery.js";
import { FEEDBACK_QUERY_FIELDS } from "../../services/store/feedback/fields.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { InvalidFieldError } from "../../services/errors.js";

const resolveFeedbackField = (path: string, pb: ParamBuilder) => FEEDBACK_QUERY_FIELDS.field(path, pb);
const resolveCallFeedbackField = (path: string, pb: ParamBuilder) => {
  const field = CALL_FEEDBACK_FIELDS.resolve(path, pb, {});
  if (!field) throw new Error(`not a feedback field: ${path}`);
  return field;
};

const str = (value: string) => ({ type: "String", value });

describe("feedback query SQL", () => {
  it("selects the asked fields of live feedback, filtered, sorted and paged, every value bound", () => {
    const q = feedbackSelectQuery({
      projectId: "acme/p", fields: ["payload", "id"], query: { $expr: { $eq: [{ $getField: "payload.emoji" }, { $literal: "👍" }] } },
      sortBy: [{ field: "payload.score", direction: "desc" }], limit: 10, offset: 5,
    });
    const leaf = (n: number) => `if(indexOf(payload_paths, {pb_${n}:String}) = 0, NULL, payload_values[indexOf(payload_paths, {pb_${n}:String})])`;
    expect(q.sql).toBe(`SELECT id, payload
FROM feedback FINAL
WHERE project_id = {pb_0:String}
  AND deleted = 0
  AND ifNull(${leaf(1)} = {pb_2:String}, 0)
ORDER BY toFloat64OrNull(${leaf(3)}) DESC NULLS LAST, ${leaf(3)} DESC NULLS LAST, id DESC
LIMIT {pb_4:UInt64}, {pb_5:UInt64}`);
    expect(q.params).toEqual({
      pb_0: str("acme/p"), pb_1: str("payload.emoji"), pb_2: str("👍"), pb_3: str("payload.score"),
      pb_4: { type: "UInt64", value: 5 }, pb_5: { type: "UInt64", value: 10 },
    });
  });

  it("defaults to every field, created order and the maximum page", () => {
    const q = feedbackSelectQuery({ projectId: "acme/p" });
    expect(q.sql).toBe(`SELECT id, project_id, weave_ref, wb_user_id, creator, created_at, feedback_type, payload, annotation_ref, runnable_ref, call_ref, trigger_ref, queue_id
FROM feedback FINAL
WHERE project_id = {pb_0:String}
  AND deleted = 0
ORDER BY created_at ASC NULLS LAST, id ASC
LIMIT {pb_1:UInt64}`);
    expect(q.params.pb_1).toEqual({ type: "UInt64", value: 10_000 });
  });

  it("purges with one INSERT … SELECT of tombstones that outrank what they delete", () => {
    const q = feedbackPurgeQuery("acme/p", { $expr: { $in: [{ $getField: "id" }, [{ $literal: "a" }, { $literal: "b" }]] } }, 1_700_000_000_000_000);
    expect(q.sql).toBe(`INSERT INTO feedback (project_id, id, payload, deleted, version)
SELECT project_id, id, '{}', 1, greatest(version + 1, toUInt64({pb_3:Int64}))
FROM feedback FINAL
WHERE project_id = {pb_0:String}
  AND deleted = 0
  AND ((id = {pb_1:String}) OR (id = {pb_2:String}))`);
    expect(q.params).toEqual({ pb_0: str("acme/p"), pb_1: str("a"), pb_2: str("b"), pb_3: { type: "Int64", value: 1_700_000_000_000_000 } });
  });

  it("reads the feedback of a chunk of calls, bounded per call", () => {
    const q = feedbackForCallsQuery("acme/p", ["c1", "c2"], 1000);
    expect(q.sql).toBe(`SELECT call_id, id, project_id, weave_ref, wb_user_id, creator, created_at, feedback_type, payload, annotation_ref, runnable_ref, call_ref, trigger_ref, queue_id
FROM feedback FINAL
WHERE project_id = {pb_0:String} AND deleted = 0 AND call_id IN (SELECT arrayJoin({pb_1:Array(String)}))
ORDER BY call_id, created_at, id
LIMIT {pb_2:UInt64} BY call_id`);
  });

  it("knows only whitelisted feedback fields", () => {
    const pb = new ParamBuilder();
    expect(resolveFeedbackField("created_at", pb)).toEqual({ sql: "created_at", kind: "datetime", nullable: false });
    expect(resolveFeedbackField("creator", pb)).toEqual({ sql: "creator", kind: "string", nullable: true });
    expect(resolveFeedbackField("payload", pb)).toEqual({ sql: "payload", kind: "json_leaf", nullable: false });
    for (const bad of ["inputs.x", "payload_paths", "deleted", "version", "payload.a'b", "payload.", "call_id"]) {
      expect(() => resolveFeedbackField(bad, new ParamBuilder()), bad).toThrow(InvalidFieldError);
    }
  });
});

describe("feedback fields of calls", () => {
  it("looks each call's value up in one scalar subquery per use, keyed by project and call", () => {
    const pb = new ParamBuilder();
    pb.str("acme/p");
    const field = resolveCallFeedbackField("feedback.[wandb.reaction.1].payload.emoji", pb);
    expect(field).toEqual({
      sql:
        "tupleElement((SELECT (arrayPushFront(groupArray(fb_key), ''), arrayPushFront(groupArray(fb_value), NULL)) " +
        "FROM (SELECT concat(project_id, '/', call_id) AS fb_key, " +
        "argMax(if(indexOf(payload_paths, {pb_2:String}) = 0, NULL, payload_values[indexOf(payload_paths, {pb_2:String})]), (created_at, id)) AS fb_value " +
        "FROM feedback FINAL WHERE deleted = 0 AND call_id != '' AND feedback_type = {pb_1:String} GROUP BY project_id, call_id)) AS feedback_map_1, toUInt8(2))" +
        "[transform(concat(project_id, '/', id), tupleElement(feedback_map_1, 1), arrayEnumerate(tupleElement(feedback_map_1, 1)), 1)]",
      kind: "json_leaf",
      nullable: true,
    });
    expect(pb.params).toEqual({ pb_0: str("acme/p"), pb_1: str("wandb.reaction.1"), pb_2: str("payload.emoji") });
  });

  it("counts with 0 as the default, and types the columns", () => {
    const count = resolveCallFeedbackField("feedback.[wandb.note.1].count", new ParamBuilder());
    expect(count).toMatchObject({ kind: "number", nullable: false });
    expect(count.sql).toContain("count() AS fb_value");
    expect(count.sql).toContain("arrayPushFront(groupArray(fb_value), 0)");
    expect(resolveCallFeedbackField("feedback.[t].created_at", new ParamBuilder())).toMatchObject({ kind: "datetime", nullable: true });
    expect(resolveCallFeedbackField("feedback.[t].wb_user_id", new ParamBuilder()).sql).toContain("argMax(wb_user_id, (created_at, id))");
  });

  it("refuses anything else", () => {
    for (const bad of ["feedback.x", "feedback.[t]", "feedback.[].payload.x", "feedback.[t].deleted", "feedback.[t].payload.a'b", "feedback.[a\nb].count"]) {
      expect(() => resolveCallFeedbackField(bad, new ParamBuilder()), bad).toThrow(InvalidFieldError);
    }
  });
});
