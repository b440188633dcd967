import { PeriodicTask } from "../periodicTask.js";
import type { Logger } from "pino";
import type { AlertState } from "../../contract/alerts.js";
import { errorText } from "../../errors.js";
import { derivedUuidv7 } from "../../ids.js";
import type { JobMessage } from "../../queue/jobs.js";
import type { AlertMetrics } from "../../store/alerts/alertMetrics.js";
import { INITIAL_STATE, stateOfSeq, type AlertRuleRecord, type AlertsRepository, type AlertTransition } from "../../store/alerts/alertsRepository.js";
import type { JobsRepository } from "../../store/jobs/jobsRepository.js";
import { microsToIso, nowMicros } from "../../times.js";
import { ALERT_WEBHOOK_JOB, type AlertWebhookInput } from "../jobs/alertWebhook.js";

/** The state a value puts a rule in; no value (no data in the window) keeps the state it is in. */
export function stateFor(rule: Pick<AlertRuleRecord, "comparison" | "threshold">, value: number | null, current: AlertState): AlertState {
  if (value === null) return current;
  const crossed = rule.comparison === "gt" ? value > rule.threshold : value < rule.threshold;
  return crossed ? "firing" : "ok";
}

/** The id of the webhook delivery of a rule's `seq`-th state change: the same in every worker. */
export const deliveryJobId = (rule: AlertRuleRecord, seq: number): string =>
  derivedUuidv7(Math.floor(rule.createdAt / 1000), `alert-webhook\n${rule.projectId}\n${rule.id}\n${seq}`);

/** The JSON body a webhook receives for a state change. */
export function webhookBody(rule: AlertRuleRecord, transition: AlertTransition) {
  return {
    alert_id: rule.id,
    name: rule.name,
    project_id: rule.projectId,
    metric: rule.metric,
    value: transition.value,
    threshold: rule.threshold,
    state: transition.state,
    window_minutes: rule.windowMinutes,
    at: microsToIso(transition.at),
  };
}

/**
 * The worker's alert evaluation: every `intervalMs` (ALERTS_EVAL_INTERVAL_MS, at most 30 s)
 * and at start, each live rule's metric is computed over its window ending now
 * (store/alerts/alertMetrics.ts) and its state decided (`stateFor`). A change of state is
 * the rule's next change, numbered `seq` (store/alerts/schema.ts: odd into `firing`, even back
 * to `ok`); for it the evaluator records a delivery job (alert.webhook, worker/jobs/alertWebhook.ts)
 * whose id derives from the rule and `seq`, then the change itself. Several workers (the Kafka
 * topology, or several machines) evaluate the same rules: two that see the same change write
 * the same `seq` and the same job id, so the change is stored once and the job runner's claim
 * lets one runner post it (store/jobs/claims.ts). The job is recorded before the change, so a
 * worker that stops between the two leaves the change to be seen again, with the same id.
 * Deliveries of one rule share a serial key and run in order. Runs never overlap; a rule
 * whose metric fails is logged and left for the next run; a deleted rule is not read any more.
 */
export class AlertEvaluator {
  private readonly task: PeriodicTask;

  constructor(
    private readonly deps: { readonly alerts: AlertsRepository; readonly metrics: AlertMetrics; readonly jobs: JobsRepository },
    private readonly options: { readonly intervalMs: number; readonly log: Logger },
  ) {
    this.task = new PeriodicTask(() => this.runOnce(), { ...options, failure: "alert evaluation failed; the next run retries" });
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** One evaluation of every live rule. */
  async runOnce(): Promise<void> {
    const rules = await this.deps.alerts.live();
    if (rules.length === 0) return;
    const latest = await this.deps.alerts.latestTransitions(null);
    const evaluations: { rule: AlertRuleRecord; value: number | null; at: number }[] = [];
    for (const rule of rules) {
      if (this.task.stopped) break;
      const at = nowMicros();
      let value: number | null;
      try {
        value = await this.deps.metrics.value(rule, at);
      } catch (err) {
        this.options.log.warn({ alert: rule.id, project: rule.projectId, err: errorText(err) }, "alert metric failed; the next run retries");
        continue;
      }
      evaluations.push({ rule, value, at });
      const current = latest.get(rule.id) ?? { seq: 0, state: INITIAL_STATE, value: null, at: 0 };
      const next = stateFor(rule, value, current.state);
      if (next === current.state) continue;
      const transition: AlertTransition = { seq: current.seq + 1, state: stateOfSeq(current.seq + 1), value, at };
      await this.deps.jobs.record([this.deliveryJob(rule, transition)]);
      await this.deps.alerts.recordTransition(rule, transition);
      this.options.log.info({ alert: rule.id, project: rule.projectId, state: transition.state, value }, "alert state changed");
    }
    await this.deps.alerts.recordEvaluations(evaluations);
  }

  private deliveryJob(rule: AlertRuleRecord, transition: AlertTransition): JobMessage {
    const input: AlertWebhookInput = { project_id: rule.projectId, alert_id: rule.id, seq: transition.seq, body: webhookBody(rule, transition) };
    return { id: deliveryJobId(rule, transition.seq), type: ALERT_WEBHOOK_JOB, serial_key: `alert:${rule.id}`, input: { ...input }, submitted_at: transition.at };
  }
}
