import type { CallsFilter } from "../../contract/calls.js";
import type { CallMetricSpec, UsageMetricSpec } from "../../contract/usage.js";
import { whereClause } from "../calls/callsQuery.js";
import { priceLookupSql } from "../costs/costFields.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { ownUsageSql } from "./ownUsage.js";
import type { StatsWindow } from "../statsWindow.js";

/**
 * SQL of `/calls/stats`. Both queries read `calls FINAL` over the window's started_at range
 * (the second key of the sort order) with the calls filter, number each call's bucket as
 * intDiv(started_at − origin, granularity), and aggregate one value per call (call
 * metrics) or per (call, model) with own usage (usage metrics, ownUsage.ts). Every
 * aggregate gets a positional alias (`c0`, `c1`, ...); `columns` maps each back to its
 * output key.
 *
 * Aggregations over the values of a bucket: sum, avg, min, max, count (of values; a running
 * call has no latency). Percentile p: nearest rank, the value at rank max(1, ceil(p/100 × n))
 * of the n values sorted ascending (arraySort of groupArray, indexed by a bound rank), NULL
 * when n = 0.
 */

export interface StatsColumn {
  readonly alias: string;
  /** Output key: `<aggregation>_<metric>` or `p<percentile>_<metric>`. */
  readonly key: string;
  /** How an empty bucket shows it: 0 for sums and counts of call_count/error_count and counts, else null. */
  readonly emptyValue: 0 | null;
}

export interface StatsQuery {
  readonly query: BuiltQuery;
  readonly columns: readonly StatsColumn[];
}

interface MetricSpec {
  readonly metric: string;
  readonly aggregations?: readonly string[] | null;
  readonly percentiles?: readonly number[] | null;
}

/** `95` → `p95`, `99.9` → `p99.9`. */
export const percentileKey = (p: number, metric: string): string => `p${String(p)}_${metric}`;

function aggregates(specs: readonly MetricSpec[], valueColumn: (metric: string) => string, pb: ParamBuilder, zeroSums: ReadonlySet<string>) {
  const selects: string[] = [];
  const columns: StatsColumn[] = [];
  const seen = new Set<string>();
  const add = (key: string, sql: string, emptyValue: 0 | null) => {
    if (seen.has(key)) return;
    seen.add(key);
    const alias = `c${columns.length}`;
    selects.push(`${sql} AS ${alias}`);
    columns.push({ alias, key, emptyValue });
  };
  for (const spec of specs) {
    const v = valueColumn(spec.metric);
    for (const agg of spec.aggregations && spec.aggregations.length > 0 ? spec.aggregations : ["sum"]) {
      const sql = agg === "count" ? `count(${v})` : `${agg}(${v})`;
      add(`${agg}_${spec.metric}`, sql, agg === "count" || (agg === "sum" && zeroSums.has(spec.metric)) ? 0 : null);
    }
    for (const p of spec.percentiles ?? []) {
      const sorted = `arraySort(groupArray(${v}))`;
      const rank = `toUInt64(greatest(1, ceil(${pb.float(p / 100)} * length(${sorted}))))`;
      add(percentileKey(p, spec.metric), `if(length(${sorted}) = 0, NULL, arrayElement(${sorted}, ${rank}))`, null);
    }
  }
  return { selects, columns };
}

function windowWhere(projectId: string, filter: CallsFilter | null | undefined, window: StatsWindow, pb: ParamBuilder, retainedFrom: number | null): string {
  const range = [`started_at >= ${pb.int(window.startMicros)}`, `started_at < ${pb.int(window.endMicros)}`];
  return whereClause({ projectId, filter, retainedFrom }, pb, range);
}

const CALL_VALUES: Readonly<Record<string, string>> = {
  call_count: "toUInt8(1)",
  error_count: "if(exception IS NULL, 0, 1)",
  latency_ms: "if(ended_at IS NULL, NULL, (ended_at - started_at) / 1000)",
};

export function callBucketsQuery(
  projectId: string,
  filter: CallsFilter | null | undefined,
  window: StatsWindow,
  metrics: readonly CallMetricSpec[],
  retainedFrom: number | null = null,
): StatsQuery {
  const pb = new ParamBuilder();
  const bucket = `intDiv(started_at - ${pb.int(window.originMicros)}, ${pb.int(window.granularitySeconds * 1_000_000)})`;
  const where = windowWhere(projectId, filter, window, pb, retainedFrom);
  const { selects, columns } = aggregates(metrics, (m) => `m_${m}`, pb, new Set(["call_count", "error_count"]));
  const values = Object.entries(CALL_VALUES).map(([m, sql]) => `${sql} AS m_${m}`);
  return {
    query: {
      sql: `SELECT bucket, ${selects.join(", ")}
FROM (SELECT ${bucket} AS bucket, ${values.join(", ")} FROM calls FINAL WHERE ${where})
GROUP BY bucket
ORDER BY bucket`,
      params: pb.params,
    },
    columns,
  };
}

const USAGE_VALUES: Readonly<Record<string, string>> = {
  input_tokens: "u_input",
  output_tokens: "u_output",
  total_tokens: "u_total",
  input_cost: "u_input_cost",
  output_cost: "u_output_cost",
  total_cost: "u_total_cost",
};

/**
 * Plan: each matching call's own usage per model (ownUsage.ts: a rolled-up SDK summary less
 * its children's), read over the window's start onwards so that every child of a matching
 * call is read (a child never starts before its parent), bucketed by the call's started_at;
 * priced when a cost metric is asked; GROUP BY bucket, model for the aggregates.
 */
export function usageBucketsQuery(
  projectId: string,
  filter: CallsFilter | null | undefined,
  window: StatsWindow,
  metrics: readonly UsageMetricSpec[],
  retainedFrom: number | null = null,
): StatsQuery {
  const pb = new ParamBuilder();
  const bucket = `intDiv(started_at - ${pb.int(window.originMicros)}, ${pb.int(window.granularitySeconds * 1_000_000)})`;
  const wanted = windowWhere(projectId, filter, window, pb, retainedFrom);
  const read = `project_id = ${pb.str(projectId)} AND started_at >= ${pb.int(window.startMicros)}`;
  const own = ownUsageSql({ table: "calls FINAL", where: read, wanted, carry: { bucket, call_started_at: "started_at", call_project: "project_id" } }, pb);
  const { selects, columns } = aggregates(metrics, (m) => USAGE_VALUES[m] ?? "NULL", pb, new Set());
  const withCosts = metrics.some((m) => m.metric.endsWith("_cost"));
  const costs = withCosts
    ? `, ${priceLookupSql("model", "call_started_at", "call_project")} AS price, u_input * price.2 AS u_input_cost, u_output * price.3 AS u_output_cost, u_input_cost + u_output_cost AS u_total_cost`
    : "";
  return {
    query: {
      sql: `SELECT bucket, model, ${selects.join(", ")}
FROM (
  SELECT bucket, model, prompt_tokens AS u_input, completion_tokens AS u_output, total_tokens AS u_total${costs}
  FROM (
${own}
  )
)
GROUP BY bucket, model
ORDER BY bucket, model`,
      params: pb.params,
    },
    columns,
  };
}
