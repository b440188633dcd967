import { describe, expect, it } from "vitest";
import { ThreadsQueryReq } from "../../services/contract/threads.js";
import { deletedTurnsQuery, recomputeThreadsQuery } from "../../services/store/threads/threadsAggregate.js";
import { TurnRank, turnRowFromSnapshot, turnVersion } from "../../services/store/threads/threadRows.js";
import { threadOrderBy, threadsPageQuery, threadsThresholdQuery, type ThreadsQuerySpec } from "../../services/store/threads/threadsQuery.js";
import type { CallSnapshot } from "../../services/store/calls/callRows.js";
import { callSnapshot } from "../support/callSnapshot.js";

const COLUMNS = "thread_id, turn_count, start_time, last_updated, first_turn_id, last_turn_id, p50_turn_duration_ms, p99_turn_duration_ms";

describe("threads page query", () => {
  it("reads the project's threads with a turn left, newest activity first, by default", () => {
    expect(threadsPageQuery({ projectId: "acme/p" })).toEqual({
      sql: `SELECT ${COLUMNS}\nFROM threads FINAL\nWHERE project_id = {pb_0:String}\n  AND turn_count > 0\nORDER BY last_updated DESC, thread_id DESC`,
      params: { pb_0: { type: "String", value: "acme/p" } },
    });
  });

  it("renders every filter, the sort and the page as typed parameters", () => {
    const spec: ThreadsQuerySpec = {
      projectId: "acme/p",
      filter: { thread_ids: ["a", "b'"], after_datetime: "2026-11-01T00:00:00.000001Z", before_datetime: "2026-11-02T00:00:00+01:00" },
      sortBy: [{ field: "turn_count", direction: "asc" }],
      limit: 10,
      offset: 20,
    };
    expect(threadsPageQuery(spec)).toEqual({
      sql: `SELECT ${COLUMNS}\nFROM threads FINAL\nWHERE project_id = {pb_0:String}\n  AND turn_count > 0\n  AND thread_id IN (SELECT arrayJoin({pb_1:Array(String)}))\n  AND start_time > {pb_2:Int64}\n  AND last_updated < {pb_3:Int64}\nORDER BY turn_count ASC, thread_id ASC\nLIMIT {pb_4:UInt64}, {pb_5:UInt64}`,
      params: {
        pb_0: { type: "String", value: "acme/p" },
        pb_1: { type: "Array(String)", value: ["a", "b'"] },
        pb_2: { type: "Int64", value: Date.UTC(2026, 10, 1) * 1000 + 1 },
        pb_3: { type: "Int64", value: Date.UTC(2026, 10, 1, 23) * 1000 },
        pb_4: { type: "UInt64", value: 20 },
        pb_5: { type: "UInt64", value: 10 },
      },
    });
  });

  it("ignores an empty thread_ids list and pages with offset alone", () => {
    const q = threadsPageQuery({ projectId: "acme/p", filter: { thread_ids: [] }, offset: 5 });
    expect(q.sql).not.toContain("thread_id IN");
    expect(q.sql.endsWith("LIMIT {pb_1:UInt64}, {pb_2:UInt64}")).toBe(true);
    expect(q.params.pb_1).toEqual({ type: "UInt64", value: 5 });
  });

  it("breaks ties by thread_id in the direction of the last term, unless thread_id is sorted on", () => {
    expect(threadOrderBy([{ field: "p50_turn_duration_ms", direction: "asc" }, { field: "start_time", direction: "desc" }])).toBe(
      "p50_turn_duration_ms ASC, start_time DESC, thread_id DESC",
    );
    expect(threadOrderBy([{ field: "thread_id", direction: "asc" }, { field: "turn_count", direction: "desc" }])).toBe("thread_id ASC, turn_count DESC");
  });

  it("windows a page on its first sort field, with the same parameters in both places", () => {
    const spec: ThreadsQuerySpec = { projectId: "acme/p", sortBy: [{ field: "p99_turn_duration_ms", direction: "desc" }], limit: 50 };
    expect(threadsThresholdQuery(spec, 200)).toEqual({
      sql: "SELECT p99_turn_duration_ms AS threshold\nFROM threads\nWHERE project_id = {pb_0:String}\n  AND turn_count > 0\n  AND p99_turn_duration_ms IS NOT NULL\nORDER BY assumeNotNull(p99_turn_duration_ms) DESC\nLIMIT {pb_1:UInt64}, 1",
      params: { pb_0: { type: "String", value: "acme/p" }, pb_1: { type: "UInt64", value: 199 } },
    });
    expect(threadsPageQuery(spec, { threshold: 1234.5 })).toEqual({
      sql: `SELECT ${COLUMNS}
FROM (
  SELECT ${COLUMNS}
  FROM threads
  PREWHERE thread_id IN (SELECT thread_id FROM threads PREWHERE p99_turn_duration_ms >= {pb_1:Float64} WHERE project_id = {pb_0:String} AND turn_count > 0)
  WHERE project_id = {pb_0:String}
  ORDER BY thread_id, version DESC
  LIMIT 1 BY thread_id
)
WHERE turn_count > 0
  AND p99_turn_duration_ms >= {pb_1:Float64}
ORDER BY p99_turn_duration_ms DESC, thread_id DESC
LIMIT {pb_2:UInt64}`,
      params: { pb_0: { type: "String", value: "acme/p" }, pb_1: { type: "Float64", value: 1234.5 }, pb_2: { type: "UInt64", value: 50 } },
    });
    const asc = threadsPageQuery({ projectId: "acme/p", sortBy: [{ field: "start_time", direction: "asc" }], limit: 5 }, { threshold: "1793491200000001" });
    expect(asc.sql).toContain("AND start_time <= {pb_1:Int64}\nORDER BY start_time ASC, thread_id ASC");
    expect(asc.params.pb_1).toEqual({ type: "Int64", value: 1793491200000001n });
  });
});

describe("threads aggregate queries", () => {
  it("recomputes the named threads inside ClickHouse from their collapsed turns", () => {
    const q = recomputeThreadsQuery("acme/p", ["t1", "t2"]);
    expect(q.params).toEqual({ pb_0: { type: "String", value: "acme/p" }, pb_1: { type: "Array(String)", value: ["t1", "t2"] } });
    expect(q.sql).toContain("FROM thread_turns FINAL\nWHERE project_id = {pb_0:String} AND thread_id IN (SELECT arrayJoin({pb_1:Array(String)}))");
    expect(q.sql).toContain("quantilesExactIf(0.5, 0.99)((ended_at - started_at) / 1000, deleted = 0 AND finished = 1)");
    expect(q.sql).toContain("sum(version) AS thread_version");
    expect(recomputeThreadsQuery("acme/p", null).sql).toContain("WHERE project_id = {pb_0:String}\nGROUP BY");
  });

  it("finds deleted turns through the call index", () => {
    const q = deletedTurnsQuery("acme/p", ["c1"]);
    expect(q.sql).toContain("started_at IN (SELECT started_at FROM call_index WHERE project_id = {pb_0:String} AND id IN (SELECT arrayJoin({pb_1:Array(String)})))");
    expect(q.sql).toContain("AND turn_id = id\n  AND thread_id != ''");
  });
});

describe("turn rows", () => {
  const call = (over: Partial<CallSnapshot>): CallSnapshot => callSnapshot({ project_id: "acme/p", id: "c", thread_id: "th", turn_id: "c", started_at: 10, ...over });

  it("keeps only turn calls: id == turn_id with a non-empty thread", () => {
    expect(turnRowFromSnapshot(call({}), 0)).not.toBeNull();
    expect(turnRowFromSnapshot(call({ turn_id: "other" }), 0)).toBeNull();
    expect(turnRowFromSnapshot(call({ thread_id: "" }), 0)).toBeNull();
    expect(turnRowFromSnapshot(call({ thread_id: null }), 0)).toBeNull();
    expect(turnRowFromSnapshot(call({ turn_id: null }), 0)).toBeNull();
  });

  it("ranks deleted above finished above running, whatever the write times", () => {
    const now = Date.UTC(2026, 10, 1);
    const running = turnRowFromSnapshot(call({}), now + 1_000_000)!;
    const finished = turnRowFromSnapshot(call({ ended_at: 20 }), now)!;
    expect(running).toMatchObject({ finished: 0, ended_at: 0, deleted: 0 });
    expect(finished).toMatchObject({ finished: 1, ended_at: 20 });
    expect(finished.version).toBeGreaterThan(running.version);
    expect(turnVersion(TurnRank.deleted, now - 1_000_000)).toBeGreaterThan(turnVersion(TurnRank.finished, now + 1_000_000));
    expect(turnVersion(TurnRank.finished, now + 1)).toBeGreaterThan(turnVersion(TurnRank.finished, now));
    expect(turnVersion(TurnRank.deleted, Date.UTC(2090, 0, 1))).toBeLessThan(2 ** 44);
  });
});

describe("threads query contract", () => {
  it("accepts the allowed sort fields and refuses any other", () => {
    expect(ThreadsQueryReq.safeParse({ project_id: "a/b", sort_by: [{ field: "p99_turn_duration_ms", direction: "desc" }] }).success).toBe(true);
    const bad = ThreadsQueryReq.safeParse({ project_id: "a/b", sort_by: [{ field: "started_at", direction: "desc" }] });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(["sort_by", 0, "field"]);
    expect(ThreadsQueryReq.safeParse({ project_id: "a/b", filter: { after_datetime: "yesterday" } }).success).toBe(false);
  });
});
