import { describe, expect, it } from "vitest";
import { callBucketsQuery, usageBucketsQuery } from "../../services/store/usage/statsQuery.js";
import type { StatsWindow } from "../../services/store/statsWindow.js";

/** The /calls/stats query builders: exact SQL and parameters for the call buckets. */

const window: StatsWindow = { startMicros: 1_000_000, endMicros: 7_200_000_000, granularitySeconds: 3600, originMicros: 0, bucketCount: 2, timezone: "UTC" };

describe("callBucketsQuery", () => {
  it("numbers buckets from the origin, filters the window, and aliases each aggregate", () => {
    const q = callBucketsQuery("acme/p", { op_names: ["op"] }, window, [
      { metric: "call_count" },
      { metric: "latency_ms", aggregations: ["avg", "count"], percentiles: [95] },
    ]);
    expect(q.query.sql).toBe(`SELECT bucket, sum(m_call_count) AS c0, avg(m_latency_ms) AS c1, count(m_latency_ms) AS c2, if(length(arraySort(groupArray(m_latency_ms))) = 0, NULL, arrayElement(arraySort(groupArray(m_latency_ms)), toUInt64(greatest(1, ceil({pb_6:Float64} * length(arraySort(groupArray(m_latency_ms)))))))) AS c3
FROM (SELECT intDiv(started_at - {pb_0:Int64}, {pb_1:Int64}) AS bucket, toUInt8(1) AS m_call_count, if(exception IS NULL, 0, 1) AS m_error_count, if(ended_at IS NULL, NULL, (ended_at - started_at) / 1000) AS m_latency_ms FROM calls FINAL WHERE project_id = {pb_4:String}
  AND id NOT IN (SELECT id FROM call_deletions WHERE project_id = {pb_4:String})
  AND (op_name IN (SELECT arrayJoin({pb_5:Array(String)})))
  AND started_at >= {pb_2:Int64}
  AND started_at < {pb_3:Int64})
GROUP BY bucket
ORDER BY bucket`);
    expect(q.query.params).toEqual({
      pb_0: { type: "Int64", value: 0 },
      pb_1: { type: "Int64", value: 3_600_000_000 },
      pb_2: { type: "Int64", value: 1_000_000 },
      pb_3: { type: "Int64", value: 7_200_000_000 },
      pb_4: { type: "String", value: "acme/p" },
      pb_5: { type: "Array(String)", value: ["op"] },
      pb_6: { type: "Float64", value: 0.95 },
    });
    expect(q.columns).toEqual([
      { alias: "c0", key: "sum_call_count", emptyValue: 0 },
      { alias: "c1", key: "avg_latency_ms", emptyValue: null },
      { alias: "c2", key: "count_latency_ms", emptyValue: 0 },
      { alias: "c3", key: "p95_latency_ms", emptyValue: null },
    ]);
  });
});

describe("usageBucketsQuery", () => {
  it("looks prices up only when a cost metric is asked", () => {
    const tokens = usageBucketsQuery("acme/p", null, window, [{ metric: "input_tokens" }]);
    expect(tokens.query.sql).not.toContain("llm_token_prices");
    expect(tokens.columns).toEqual([{ alias: "c0", key: "sum_input_tokens", emptyValue: null }]);
    const costs = usageBucketsQuery("acme/p", null, window, [{ metric: "total_cost", aggregations: ["max"], percentiles: [99.9] }]);
    expect(costs.query.sql).toContain("FROM llm_token_prices");
    expect(costs.columns.map((c) => c.key)).toEqual(["max_total_cost", "p99.9_total_cost"]);
  });
});
