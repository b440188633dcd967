import { isJsonObject } from "../../json.js";
import type { ClickHouseStore } from "../clickhouse.js";
import type { ProjectRetention } from "../projects/retention.js";
import type { AlertRuleRecord } from "./alertsRepository.js";
import { callMetricQuery, scoresQuery } from "./alertMetricsQuery.js";

/**
 * The number a monitor's score stands for: its feedback's `payload.output` when it is a
 * number; a boolean as 1 (true) or 0 (false); an object's first field (in the order written)
 * whose value is a number; anything else is no number and not counted.
 */
export function scoreNumber(payloadText: string): number | null {
  let payload: unknown;
  try {
    payload = JSON.parse(payloadText);
  } catch {
    return null;
  }
  if (!isJsonObject(payload)) return null;
  const output = payload.output;
  if (typeof output === "number") return Number.isFinite(output) ? output : null;
  if (typeof output === "boolean") return output ? 1 : 0;
  if (isJsonObject(output)) {
    for (const value of Object.values(output)) if (typeof value === "number" && Number.isFinite(value)) return value;
  }
  return null;
}

const numberOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** The value of a rule's metric over the window that ends at `nowMicros` (null: no data in it). */
export class AlertMetrics {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly retention: ProjectRetention,
  ) {}

  async value(rule: AlertRuleRecord, nowMicros: number): Promise<number | null> {
    const fromMicros = nowMicros - rule.windowMinutes * 60_000_000;
    if (rule.metric === "score_mean") {
      if (!rule.monitorRef || !rule.scorer) return null;
      const rows = await this.store.rows<{ payload: string }>("alerts_metric_scores", scoresQuery(rule.projectId, rule.monitorRef, rule.scorer, fromMicros, nowMicros));
      const scores = rows.map((r) => scoreNumber(r.payload)).filter((n): n is number => n !== null);
      return scores.length === 0 ? null : scores.reduce((a, b) => a + b, 0) / scores.length;
    }
    const query = callMetricQuery(rule.metric, {
      projectId: rule.projectId,
      opNames: rule.opNames,
      fromMicros,
      toMicros: nowMicros,
      retainedFrom: await this.retention.cutoff(rule.projectId),
    });
    const [row] = await this.store.rows<{ v: number | string | null }>(`alerts_metric_${rule.metric}`, query);
    return numberOrNull(row?.v);
  }
}
