import type { AlertMetric } from "../../contract/alerts.js";
import { whereClause } from "../calls/callsQuery.js";
import { priceLookupSql } from "../costs/costFields.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { ownUsageSql } from "../usage/ownUsage.js";

/**
 * SQL of the alert metrics (docs/resources.md, "Alerts"). The calls counted are those of the
 * project that ended in the window [fromMicros, toMicros], not deleted, within the project's
 * retention, of the rule's ops when it names some (the calls filter's `op_names`, whereClause).
 * Each query answers one row with one column `v` (NULL: no data in the window).
 *
 * - error_rate: calls with an exception ÷ calls counted.
 * - latency_p99_ms: nearest rank (as `/calls/stats`): the value at rank max(1, ceil(0.99 × n))
 *   of the n latencies sorted ascending.
 * - tokens, cost_usd: the sum over the calls counted of each one's own usage (ownUsage.ts) per
 *   model: total tokens, or prompt × the prompt price + completion × the completion price of
 *   the model at the call's start (costFields.ts, as `include_costs`). The read starts at the
 *   earliest start of a call counted, so that each one's direct children are read.
 * The scores of `score_mean` are read by `scoresQuery` and averaged in the service (the
 * rule for a score's number is there).
 */

export interface MetricWindow {
  readonly projectId: string;
  readonly opNames: readonly string[] | null;
  readonly fromMicros: number;
  readonly toMicros: number;
  /** The project's retention cutoff (store/projects/retention.ts). */
  readonly retainedFrom: number | null;
}

type CallMetric = Exclude<AlertMetric, "score_mean">;

function counted(w: MetricWindow, pb: ParamBuilder): string {
  const filter = w.opNames && w.opNames.length > 0 ? { op_names: [...w.opNames] } : null;
  return whereClause({ projectId: w.projectId, filter, retainedFrom: w.retainedFrom }, pb, [
    "ended_at IS NOT NULL",
    `assumeNotNull(ended_at) >= ${pb.int(w.fromMicros)}`,
    `assumeNotNull(ended_at) <= ${pb.int(w.toMicros)}`,
  ]);
}

function callValuesQuery(metric: "error_rate" | "latency_p99_ms", w: MetricWindow): BuiltQuery {
  const pb = new ParamBuilder();
  const where = counted(w, pb);
  if (metric === "error_rate") {
    return { sql: `SELECT if(count() = 0, NULL, countIf(exception IS NOT NULL) / count()) AS v FROM calls FINAL WHERE ${where}`, params: pb.params };
  }
  const sorted = "arraySort(groupArray(latency))";
  const rank = `toUInt64(greatest(1, ceil(${pb.float(0.99)} * length(${sorted}))))`;
  return {
    sql: `SELECT if(length(${sorted}) = 0, NULL, arrayElement(${sorted}, ${rank})) AS v
FROM (SELECT (assumeNotNull(ended_at) - started_at) / 1000 AS latency FROM calls FINAL WHERE ${where})`,
    params: pb.params,
  };
}

function usageQuery(metric: "tokens" | "cost_usd", w: MetricWindow): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(w.projectId);
  const wanted = counted(w, pb);
  const earliest = `(SELECT if(count() = 0, toInt64(9223372036854775807), min(started_at)) FROM calls
    WHERE project_id = ${project} AND ended_at IS NOT NULL AND assumeNotNull(ended_at) >= ${pb.int(w.fromMicros)})`;
  const read = `project_id = ${project} AND started_at >= ${earliest}`;
  const own = ownUsageSql({ table: "calls FINAL", where: read, wanted, carry: { call_started_at: "started_at", call_project: "project_id" } }, pb);
  const value =
    metric === "tokens"
      ? "total_tokens AS u"
      : `${priceLookupSql("model", "call_started_at", "call_project")} AS price, prompt_tokens * price.2 + completion_tokens * price.3 AS u`;
  return { sql: `SELECT toFloat64(sum(u)) AS v FROM (SELECT ${value} FROM (\n${own}\n))`, params: pb.params };
}

export function callMetricQuery(metric: CallMetric, w: MetricWindow): BuiltQuery {
  return metric === "tokens" || metric === "cost_usd" ? usageQuery(metric, w) : callValuesQuery(metric, w);
}

/** Most score feedback rows read per evaluation (the newest). */
export const MAX_SCORES = 10_000;

/** The payload texts of the scores a monitor wrote in the window: feedback `wandb.runnable.<scorer>` whose trigger_ref is the monitor. */
export function scoresQuery(projectId: string, monitorRef: string, scorer: string, fromMicros: number, toMicros: number): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT payload FROM feedback FINAL
WHERE project_id = ${pb.str(projectId)} AND deleted = 0 AND feedback_type = ${pb.str(`wandb.runnable.${scorer}`)}
  AND trigger_ref = ${pb.str(monitorRef)} AND created_at >= ${pb.int(fromMicros)} AND created_at <= ${pb.int(toMicros)}
ORDER BY created_at DESC LIMIT ${pb.count(MAX_SCORES)}`,
    params: pb.params,
  };
}
