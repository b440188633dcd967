import type { CallsFilter } from "../../contract/calls.js";
import type { CallMetricSpec, UsageMetricSpec } from "../../contract/usage.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { callBucketsQuery, usageBucketsQuery, type StatsColumn } from "./statsQuery.js";
import type { StatsWindow } from "../statsWindow.js";
import { microsToIso } from "../../times.js";
import type { ProjectRetention } from "../projects/retention.js";

export type Bucket = Record<string, string | number | null>;

/** What `/calls/stats` computes when the request names no metrics. */
export const DEFAULT_USAGE_METRICS: readonly UsageMetricSpec[] = [
  { metric: "input_tokens", aggregations: ["sum"] },
  { metric: "output_tokens", aggregations: ["sum"] },
  { metric: "total_tokens", aggregations: ["sum"] },
];
export const DEFAULT_CALL_METRICS: readonly CallMetricSpec[] = [
  { metric: "call_count", aggregations: ["sum"] },
  { metric: "error_count", aggregations: ["sum"] },
  { metric: "latency_ms", aggregations: ["avg"], percentiles: [50, 95, 99] },
];

const value = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** Reads of `/calls/stats`: call buckets (every bucket of the window) and usage buckets (per model). */
export class StatsRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly retention: ProjectRetention,
  ) {}

  async callBuckets(projectId: string, filter: CallsFilter | null | undefined, window: StatsWindow, metrics: readonly CallMetricSpec[]): Promise<Bucket[]> {
    if (metrics.length === 0) return [];
    const { query, columns } = callBucketsQuery(projectId, filter, window, metrics, await this.retention.cutoff(projectId));
    const rows = await this.store.rows<Record<string, unknown>>("stats_call_buckets", query);
    const byBucket = new Map(rows.map((r) => [Number(r.bucket), r]));
    const out: Bucket[] = [];
    for (let i = 0; i < window.bucketCount; i++) {
      const row = byBucket.get(i);
      out.push(shape(window, i, columns, row));
    }
    return out;
  }

  async usageBuckets(projectId: string, filter: CallsFilter | null | undefined, window: StatsWindow, metrics: readonly UsageMetricSpec[]): Promise<Bucket[]> {
    if (metrics.length === 0) return [];
    const { query, columns } = usageBucketsQuery(projectId, filter, window, metrics, await this.retention.cutoff(projectId));
    const rows = await this.store.rows<Record<string, unknown>>("stats_usage_buckets", query);
    return rows.map((r) => ({ ...shape(window, Number(r.bucket), columns, r, String(r.model)) }));
  }
}

function shape(window: StatsWindow, index: number, columns: readonly StatsColumn[], row: Record<string, unknown> | undefined, model?: string): Bucket {
  const bucket: Bucket = { timestamp: microsToIso(window.originMicros + index * window.granularitySeconds * 1_000_000) };
  if (model !== undefined) bucket.model = model;
  for (const c of columns) bucket[c.key] = row ? value(row[c.alias]) : c.emptyValue;
  return bucket;
}
