import { AGGREGATIONS, DEFAULT_AGGREGATIONS, type FeedbackMetricSpec, type FeedbackStatsReq, type FeedbackStatsRes, type ValueType } from "../../contract/feedback.js";
import { ValidationError, InvalidFieldError } from "../../errors.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { payloadLeafSql } from "./fields.js";
import { microsToIso } from "../../times.js";
import { resolveStatsWindow, type StatsWindow } from "../statsWindow.js";
import { retainedFeedback } from "../projects/retention.js";

/**
 * `/feedback/stats`: feedback counts and payload aggregates in time buckets.
 *
 * Buckets: fixed-length, `granularity` seconds, aligned to multiples of the granularity in
 * the requested timezone's local time (its UTC offset at `start`; DST changes inside the
 * range do not move the boundaries): daily buckets start at local midnight. The first
 * bucket is the one holding `start`; every bucket up to `end` is listed, empty ones too.
 * Only feedback created in [start, end) counts. The range, the granularity chosen without
 * one and the bucket cap are the same as `/calls/stats` (../statsWindow.ts); the answer
 * says which granularity was used.
 *
 * Metrics read the payload leaf at `json_path` (flattened as in payload.ts):
 * - numeric: the leaf read as a number (a JSON number, or a string that reads as one;
 *   other leaves are skipped): avg, sum, min,
 *   max, count, and percentiles: the exact nearest-rank value, i.e. the element at
 *   position floor(p/100 · n) (0-based, capped at n−1) of the bucket's sorted values;
 * - boolean: the leaf `true`/`false` (anything else skipped): count_true, count_false,
 *   count, avg (the share of true);
 * - categorical: the leaf as text: count, count_distinct, counts (the MAX_CATEGORIES most
 *   frequent values with their counts, most frequent first, ties by value).
 * Counts are 0 and the other aggregates null where a bucket has no value.
 *
 * Answer: {start, end, granularity, timezone, buckets: [{timestamp, count, <agg>_<slug>,
 * p<N>_<slug>}...], window_stats: {<slug>: {<agg>: value, p<N>: value}}} where the slug is
 * the json_path with every character other than [A-Za-z0-9_] replaced by `_`, and N the
 * percentile with `.` written `_` (p99_9). window_stats aggregates the whole range.
 */

export const MAX_CATEGORIES = 50;

const COUNT_AGGREGATIONS = new Set(["count", "count_true", "count_false", "count_distinct"]);

interface MetricPlan {
  readonly spec: FeedbackMetricSpec;
  readonly slug: string;
  readonly aggregations: readonly string[];
  readonly percentiles: readonly number[];
}

export function metricSlug(jsonPath: string): string {
  return jsonPath.replace(/[^A-Za-z0-9_]/g, "_");
}

export function percentileKey(p: number): string {
  return `p${String(p).replace(".", "_")}`;
}

function planMetrics(metrics: readonly FeedbackMetricSpec[]): MetricPlan[] {
  const slugs = new Set<string>();
  return metrics.map((spec, i) => {
    const slug = metricSlug(spec.json_path);
    if (slugs.has(slug)) throw ValidationError.at(["body", "metrics", i, "json_path"], `two metrics share the slug ${slug}`);
    slugs.add(slug);
    const allowed: readonly string[] = AGGREGATIONS[spec.value_type];
    spec.aggregations.forEach((agg, j) => {
      if (!allowed.includes(agg)) {
        throw ValidationError.at(["body", "metrics", i, "aggregations", j], `${agg} does not apply to ${spec.value_type} values (allowed: ${allowed.join(", ")})`);
      }
    });
    const aggregations = spec.aggregations.length > 0 ? [...new Set(spec.aggregations)] : DEFAULT_AGGREGATIONS[spec.value_type];
    const percentiles = spec.value_type === "numeric" ? [...new Set(spec.percentiles)] : [];
    return { spec, slug, aggregations, percentiles };
  });
}

/** The metric's value on the current row, typed for its aggregations. */
function valueSql(type: ValueType, leaf: string): string {
  switch (type) {
    case "numeric":
      return `toFloat64OrNull(${leaf})`;
    case "boolean":
      return `multiIf(${leaf} = 'true', 1, ${leaf} = 'false', 0, NULL)`;
    case "categorical":
      return leaf;
  }
}

/** One aggregation over the column `v` that holds a metric's values. */
function aggregateSql(agg: string, v: string): string {
  switch (agg) {
    case "avg":
    case "sum":
    case "min":
    case "max":
    case "count":
      return `${agg}(${v})`;
    case "count_true":
      return `sum(ifNull(${v} = 1, 0))`;
    case "count_false":
      return `sum(ifNull(${v} = 0, 0))`;
    case "count_distinct":
      return `uniqExact(${v})`;
  }
  throw new InvalidFieldError(`unknown aggregation ${agg}`);
}

interface Filters {
  readonly projectId: string;
  readonly feedbackType?: string | null;
  readonly triggerRef?: string | null;
  /** The project's retention cutoff: feedback on calls past it is left out. */
  readonly retainedFrom?: number | null;
}

/** Live feedback of the project created in [start, end), of the asked type and trigger. */
function rangeWhere(filters: Filters, plan: StatsWindow, pb: ParamBuilder): string {
  const project = pb.str(filters.projectId);
  const conditions = [
    `project_id = ${project}`,
    ...retainedFeedback(project, filters.retainedFrom, pb),
    "deleted = 0",
    `created_at >= ${pb.int(plan.startMicros)}`,
    `created_at < ${pb.int(plan.endMicros)}`,
  ];
  if (filters.feedbackType) conditions.push(`feedback_type = ${pb.str(filters.feedbackType)}`);
  conditions.push(...triggerCondition(filters.triggerRef, pb));
  return conditions.join("\n  AND ");
}

/** `trigger_ref`: exact, or every version when it ends in `:*` (prefix up to the colon). */
export function triggerCondition(triggerRef: string | null | undefined, pb: ParamBuilder): string[] {
  if (!triggerRef) return [];
  if (!triggerRef.endsWith(":*")) return [`trigger_ref = ${pb.str(triggerRef)}`];
  const prefix = triggerRef.slice(0, -1);
  return [`substring(trigger_ref, 1, ${pb.int(Buffer.byteLength(prefix))}) = ${pb.str(prefix)}`];
}

function bucketSql(plan: StatsWindow, pb: ParamBuilder): string {
  return `intDiv(created_at - ${pb.int(plan.originMicros)}, ${pb.int(plan.granularitySeconds * 1_000_000)})`;
}

/**
 * Bucket (or, with `byBucket` false, whole-range) aggregates of every metric except
 * `counts`. Three levels: the rows with each metric's value (`m<i>`), the aggregates per
 * bucket (each metric's values sorted into an array when percentiles are asked), and the
 * percentile elements picked from those arrays, so the arrays never leave the server.
 */
export function statsAggregateQuery(filters: Filters, plan: StatsWindow, metrics: readonly MetricPlan[], byBucket: boolean): BuiltQuery {
  const pb = new ParamBuilder();
  const values = metrics.map((m, i) => `${valueSql(m.spec.value_type, payloadLeafSql(m.spec.json_path, pb))} AS m${i}`);
  const aggregates: string[] = byBucket ? [`${bucketSql(plan, pb)} AS bucket`, "count() AS count"] : ["count() AS count"];
  const picked: string[] = byBucket ? ["bucket", "count"] : ["count"];
  metrics.forEach((m, i) => {
    for (const agg of m.aggregations) {
      if (agg === "counts") continue;
      aggregates.push(`${aggregateSql(agg, `m${i}`)} AS m${i}_${agg}`);
      picked.push(`m${i}_${agg}`);
    }
    if (m.percentiles.length > 0) {
      const sorted = `m${i}_sorted`;
      aggregates.push(`arraySort(groupArray(m${i})) AS ${sorted}`);
      m.percentiles.forEach((p, j) => {
        const position = `least(length(${sorted}), toUInt64(floor(${pb.float(p / 100)} * length(${sorted}))) + 1)`;
        picked.push(`if(length(${sorted}) = 0, NULL, ${sorted}[${position}]) AS m${i}_p${j}`);
      });
    }
  });
  const where = rangeWhere(filters, plan, pb);
  return {
    sql: `SELECT ${picked.join(", ")}
FROM (
  SELECT ${aggregates.join(",\n    ")}
  FROM (
    SELECT ${["created_at", ...values].join(", ")}
    FROM feedback FINAL
    WHERE ${where}
  )${byBucket ? "\n  GROUP BY bucket" : ""}
)${byBucket ? "\nORDER BY bucket" : ""}`,
    params: pb.params,
  };
}

/** The most frequent values of a categorical metric, per bucket or over the range. */
export function categoryCountsQuery(filters: Filters, plan: StatsWindow, jsonPath: string, byBucket: boolean): BuiltQuery {
  const pb = new ParamBuilder();
  const bucket = byBucket ? `${bucketSql(plan, pb)} AS bucket, ` : "";
  const leaf = payloadLeafSql(jsonPath, pb);
  const where = rangeWhere(filters, plan, pb);
  const limit = pb.count(MAX_CATEGORIES);
  return {
    sql: `SELECT ${bucket}${leaf} AS value, count() AS n
FROM feedback FINAL
WHERE ${where}
  AND ${leaf} IS NOT NULL
GROUP BY ${byBucket ? "bucket, " : ""}value
ORDER BY ${byBucket ? "bucket, " : ""}n DESC, value
${byBucket ? `LIMIT ${limit} BY bucket` : `LIMIT ${limit}`}`,
    params: pb.params,
  };
}

type Row = Record<string, unknown>;

function normalized(agg: string, value: unknown): number | null {
  if (COUNT_AGGREGATIONS.has(agg)) return Number(value ?? 0);
  return value === null || value === undefined ? null : Number(value);
}

/** Runs the stats queries and shapes the answer (see the module comment). */
export async function feedbackStats(store: ClickHouseStore, req: FeedbackStatsReq, nowMicros: number, retainedFrom: number | null): Promise<FeedbackStatsRes> {
  const plan = resolveStatsWindow(req, nowMicros);
  const metrics = planMetrics(req.metrics);
  const filters: Filters = { projectId: req.project_id, feedbackType: req.feedback_type, triggerRef: req.trigger_ref, retainedFrom };

  const [bucketRows, [windowRow]] = await Promise.all([
    store.rows<Row>("feedback_stats_buckets", statsAggregateQuery(filters, plan, metrics, true)),
    store.rows<Row>("feedback_stats_window", statsAggregateQuery(filters, plan, metrics, false)),
  ]);
  const categorical = metrics.map((m) => m.aggregations.includes("counts"));
  const counts = await Promise.all(
    metrics.map(async (m, i) => {
      if (!categorical[i]) return null;
      const [perBucket, whole] = await Promise.all([
        store.rows<{ bucket: string; value: string; n: string }>("feedback_stats_counts", categoryCountsQuery(filters, plan, m.spec.json_path, true)),
        store.rows<{ value: string; n: string }>("feedback_stats_counts_window", categoryCountsQuery(filters, plan, m.spec.json_path, false)),
      ]);
      const byBucket = new Map<number, Record<string, number>>();
      for (const r of perBucket) {
        const entry = byBucket.get(Number(r.bucket)) ?? {};
        entry[r.value] = Number(r.n);
        byBucket.set(Number(r.bucket), entry);
      }
      return { byBucket, whole: Object.fromEntries(whole.map((r) => [r.value, Number(r.n)])) };
    }),
  );

  const shape = (row: Row | undefined, bucket: number | null): Record<string, Record<string, unknown>> =>
    Object.fromEntries(
      metrics.map((m, i) => {
        const values: Record<string, unknown> = {};
        for (const agg of m.aggregations) {
          if (agg === "counts") {
            const c = counts[i]!;
            values.counts = (bucket === null ? c.whole : c.byBucket.get(bucket)) ?? {};
          } else values[agg] = normalized(agg, row?.[`m${i}_${agg}`]);
        }
        m.percentiles.forEach((p, j) => {
          values[percentileKey(p)] = normalized("p", row?.[`m${i}_p${j}`]);
        });
        return [m.slug, values];
      }),
    );

  const rowsByBucket = new Map(bucketRows.map((r) => [Number(r.bucket), r]));
  const buckets: Record<string, unknown>[] = [];
  for (let b = 0; b < plan.bucketCount; b++) {
    const row = rowsByBucket.get(b);
    const out: Record<string, unknown> = { timestamp: microsToIso(plan.originMicros + b * plan.granularitySeconds * 1_000_000), count: Number(row?.count ?? 0) };
    for (const [slug, values] of Object.entries(shape(row, b))) {
      for (const [agg, value] of Object.entries(values)) out[`${agg}_${slug}`] = value;
    }
    buckets.push(out);
  }
  return {
    start: microsToIso(plan.startMicros),
    end: microsToIso(plan.endMicros),
    granularity: plan.granularitySeconds,
    timezone: req.timezone,
    buckets,
    window_stats: shape(windowRow, null),
  };
}
