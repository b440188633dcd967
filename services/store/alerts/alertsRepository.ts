import { ALERT_METRICS, type AlertMetric, type AlertState } from "../../contract/alerts.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";

/** A rule as stored (store/alerts/schema.ts). */
export interface AlertRuleRecord {
  readonly projectId: string;
  readonly id: string;
  readonly name: string;
  readonly metric: AlertMetric;
  readonly windowMinutes: number;
  readonly comparison: "gt" | "lt";
  readonly threshold: number;
  readonly opNames: readonly string[] | null;
  readonly monitorRef: string | null;
  readonly scorer: string | null;
  readonly webhookUrl: string;
  /** µs since the epoch. */
  readonly createdAt: number;
}

/** One state change of a rule: the `seq`-th (from 1). */
export interface AlertTransition {
  readonly seq: number;
  readonly state: AlertState;
  readonly value: number | null;
  /** µs. */
  readonly at: number;
}

export interface AlertEvaluation {
  readonly value: number | null;
  /** µs. */
  readonly evaluatedAt: number;
}

/** A rule's state where no change was recorded yet. */
export const INITIAL_STATE: AlertState = "ok";
/** The state after the `seq`-th change: states alternate from `ok`, so the number decides it. */
export const stateOfSeq = (seq: number): AlertState => (seq % 2 === 1 ? "firing" : "ok");

interface RuleRow {
  project_id: string;
  id: string;
  name: string;
  metric: string;
  window_minutes: number | string;
  comparison: string;
  threshold: number | string;
  op_names: string;
  monitor_ref: string | null;
  scorer: string | null;
  webhook_url: string;
  created_at: number | string;
}

const RULE_COLUMNS = "project_id, id, name, metric, window_minutes, comparison, threshold, op_names, monitor_ref, scorer, webhook_url, created_at";

const isMetric = (text: string): text is AlertMetric => (ALERT_METRICS as readonly string[]).includes(text);

function fromRuleRow(row: RuleRow): AlertRuleRecord | null {
  if (!isMetric(row.metric) || (row.comparison !== "gt" && row.comparison !== "lt")) return null;
  return {
    projectId: row.project_id,
    id: row.id,
    name: row.name,
    metric: row.metric,
    windowMinutes: Number(row.window_minutes),
    comparison: row.comparison,
    threshold: Number(row.threshold),
    opNames: row.op_names === "" ? null : (JSON.parse(row.op_names) as string[]),
    monitorRef: row.monitor_ref,
    scorer: row.scorer,
    webhookUrl: row.webhook_url,
    createdAt: Number(row.created_at),
  };
}

function toRuleRow(rule: AlertRuleRecord, deleted: boolean, version: number) {
  return {
    project_id: rule.projectId,
    id: rule.id,
    name: rule.name,
    metric: rule.metric,
    window_minutes: rule.windowMinutes,
    comparison: rule.comparison,
    threshold: rule.threshold,
    op_names: rule.opNames === null ? "" : JSON.stringify(rule.opNames),
    monitor_ref: rule.monitorRef,
    scorer: rule.scorer,
    webhook_url: rule.webhookUrl,
    created_at: rule.createdAt,
    deleted: deleted ? 1 : 0,
    version,
  };
}

const rules = (rows: readonly RuleRow[]): AlertRuleRecord[] => rows.map(fromRuleRow).filter((r): r is AlertRuleRecord => r !== null);
const numberOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** The `alerts`, `alert_transitions` and `alert_evaluations` tables. */
export class AlertsRepository {
  constructor(private readonly store: ClickHouseStore) {}

  async create(rule: AlertRuleRecord): Promise<void> {
    await this.store.insert("alerts_create", "alerts", [toRuleRow(rule, false, rule.createdAt)]);
  }

  /** A newer version of the rule's row that says it is deleted. */
  async delete(rule: AlertRuleRecord, at: number): Promise<void> {
    await this.store.insert("alerts_delete", "alerts", [toRuleRow(rule, true, Math.max(at, rule.createdAt + 1))]);
  }

  async find(projectId: string, id: string): Promise<AlertRuleRecord | null> {
    const pb = new ParamBuilder();
    const sql = `SELECT ${RULE_COLUMNS} FROM alerts FINAL WHERE project_id = ${pb.str(projectId)} AND id = ${pb.str(id)} AND deleted = 0`;
    return rules(await this.store.rows<RuleRow>("alerts_find", { sql, params: pb.params }))[0] ?? null;
  }

  /** The project's live rules, oldest first. */
  async list(projectId: string): Promise<AlertRuleRecord[]> {
    const pb = new ParamBuilder();
    const sql = `SELECT ${RULE_COLUMNS} FROM alerts FINAL WHERE project_id = ${pb.str(projectId)} AND deleted = 0 ORDER BY created_at, id`;
    return rules(await this.store.rows<RuleRow>("alerts_list", { sql, params: pb.params }));
  }

  /** Every live rule of every project: what the worker evaluates. */
  async live(): Promise<AlertRuleRecord[]> {
    const sql = `SELECT ${RULE_COLUMNS} FROM alerts FINAL WHERE deleted = 0 ORDER BY project_id, created_at, id`;
    return rules(await this.store.rows<RuleRow>("alerts_live", { sql, params: {} }));
  }

  /** Each rule's latest state change, by rule id (rules without one are absent: `ok`). */
  async latestTransitions(projectId: string | null): Promise<Map<string, AlertTransition>> {
    const pb = new ParamBuilder();
    const where = projectId === null ? "1" : `project_id = ${pb.str(projectId)}`;
    const sql = `SELECT alert_id, max(seq) AS last_seq, argMax(value, seq) AS last_value, argMax(at, seq) AS last_at
FROM alert_transitions FINAL WHERE ${where} GROUP BY project_id, alert_id`;
    const rows = await this.store.rows<{ alert_id: string; last_seq: number | string; last_value: number | string | null; last_at: number | string }>("alerts_latest_transitions", { sql, params: pb.params });
    return new Map(rows.map((r) => [r.alert_id, { seq: Number(r.last_seq), state: stateOfSeq(Number(r.last_seq)), value: numberOrNull(r.last_value), at: Number(r.last_at) }]));
  }

  /** The project's state changes, latest first, at most `limit` per rule. */
  async history(projectId: string, limit: number): Promise<Map<string, AlertTransition[]>> {
    const pb = new ParamBuilder();
    const sql = `SELECT alert_id, seq, value, at FROM alert_transitions FINAL WHERE project_id = ${pb.str(projectId)}
ORDER BY alert_id, seq DESC LIMIT ${pb.count(limit)} BY alert_id`;
    const rows = await this.store.rows<{ alert_id: string; seq: number | string; value: number | string | null; at: number | string }>("alerts_history", { sql, params: pb.params });
    const out = new Map<string, AlertTransition[]>();
    for (const r of rows) {
      const list = out.get(r.alert_id) ?? [];
      list.push({ seq: Number(r.seq), state: stateOfSeq(Number(r.seq)), value: numberOrNull(r.value), at: Number(r.at) });
      out.set(r.alert_id, list);
    }
    return out;
  }

  /** The rule's `seq`-th state change as stored (the one seen first, when several workers wrote it), or null. */
  async transition(projectId: string, alertId: string, seq: number): Promise<AlertTransition | null> {
    const pb = new ParamBuilder();
    const sql = `SELECT seq, value, at FROM alert_transitions FINAL
WHERE project_id = ${pb.str(projectId)} AND alert_id = ${pb.str(alertId)} AND seq = ${pb.int(seq)}`;
    const [row] = await this.store.rows<{ seq: number | string; value: number | string | null; at: number | string }>("alerts_transition", { sql, params: pb.params });
    return row ? { seq: Number(row.seq), state: stateOfSeq(Number(row.seq)), value: numberOrNull(row.value), at: Number(row.at) } : null;
  }

  /** Each rule's last evaluation, by rule id. */
  async lastEvaluations(projectId: string): Promise<Map<string, AlertEvaluation>> {
    const pb = new ParamBuilder();
    const sql = `SELECT alert_id, argMax(value, evaluated_at) AS last_value, max(evaluated_at) AS last_at
FROM alert_evaluations WHERE project_id = ${pb.str(projectId)} GROUP BY alert_id`;
    const rows = await this.store.rows<{ alert_id: string; last_value: number | string | null; last_at: number | string }>("alerts_last_evaluations", { sql, params: pb.params });
    return new Map(rows.map((r) => [r.alert_id, { value: numberOrNull(r.last_value), evaluatedAt: Number(r.last_at) }]));
  }

  async recordEvaluations(evaluations: readonly { rule: AlertRuleRecord; value: number | null; at: number }[]): Promise<void> {
    await this.store.insert(
      "alerts_record_evaluations",
      "alert_evaluations",
      evaluations.map((e) => ({ project_id: e.rule.projectId, alert_id: e.rule.id, value: e.value, evaluated_at: e.at })),
    );
  }

  /** Writes the rule's `seq`-th state change; writing the same `seq` again (another worker) leaves one. */
  async recordTransition(rule: AlertRuleRecord, transition: AlertTransition): Promise<void> {
    await this.store.insert("alerts_record_transition", "alert_transitions", [
      { project_id: rule.projectId, alert_id: rule.id, seq: transition.seq, state: transition.state, value: transition.value, at: transition.at, rank: Number.MAX_SAFE_INTEGER - transition.at },
    ]);
  }
}
