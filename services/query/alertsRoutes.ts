import { alertCreateOp, alertDeleteOp, ALERT_HISTORY_LIMIT, alertsQueryOp, type AlertRule } from "../contract/alerts.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { HttpApi } from "../http/app.js";
import { uuidv7 } from "../ids.js";
import { AlertsRepository, INITIAL_STATE, type AlertRuleRecord } from "../store/alerts/alertsRepository.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { microsToIso, nowMicros } from "../times.js";
import type { WebhookTargets } from "../worker/alerts/webhookTarget.js";

/**
 * `/alerts/create`, `/alerts/query`, `/alerts/delete` (contract/alerts.ts): rules are written
 * straight to ClickHouse; their state is what the worker's evaluation wrote
 * (worker/alerts/alertEvaluator.ts), never computed here.
 */
export function mountAlertRoutes(api: HttpApi, deps: { store: ClickHouseStore; targets: WebhookTargets }): void {
  const repo = new AlertsRepository(deps.store);

  api.mount(alertCreateOp, async ({ body }) => {
    const refusal = deps.targets.refusal(body.webhook_url);
    if (refusal !== null) throw ValidationError.at(["body", "webhook_url"], refusal);
    const rule: AlertRuleRecord = {
      projectId: body.project_id,
      id: uuidv7(),
      name: body.name,
      metric: body.metric,
      windowMinutes: body.window_minutes,
      comparison: body.comparison,
      threshold: body.threshold,
      opNames: body.op_names && body.op_names.length > 0 ? body.op_names : null,
      monitorRef: body.monitor_ref ?? null,
      scorer: body.scorer ?? null,
      webhookUrl: body.webhook_url,
      createdAt: nowMicros(),
    };
    await repo.create(rule);
    return { id: rule.id };
  });

  api.mount(alertsQueryOp, async ({ body }) => {
    const [rules, latest, evaluations, history] = await Promise.all([
      repo.list(body.project_id),
      repo.latestTransitions(body.project_id),
      repo.lastEvaluations(body.project_id),
      repo.history(body.project_id, ALERT_HISTORY_LIMIT),
    ]);
    const alerts: AlertRule[] = rules.map((rule) => {
      const evaluation = evaluations.get(rule.id);
      return {
        id: rule.id,
        name: rule.name,
        metric: rule.metric,
        window_minutes: rule.windowMinutes,
        comparison: rule.comparison,
        threshold: rule.threshold,
        op_names: rule.opNames ? [...rule.opNames] : null,
        monitor_ref: rule.monitorRef,
        scorer: rule.scorer,
        webhook_url: rule.webhookUrl,
        state: latest.get(rule.id)?.state ?? INITIAL_STATE,
        last_value: evaluation?.value ?? null,
        last_evaluated_at: evaluation ? microsToIso(evaluation.evaluatedAt) : null,
        history: (history.get(rule.id) ?? []).map((t) => ({ state: t.state, value: t.value, at: microsToIso(t.at) })),
      };
    });
    return { alerts };
  });

  api.mount(alertDeleteOp, async ({ body }) => {
    const rule = await repo.find(body.project_id, body.id);
    if (!rule) throw new NotFoundError(`alert ${body.id} not found`);
    await repo.delete(rule, nowMicros());
    return {};
  });
}
