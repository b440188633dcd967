import { errorText, RetryableError } from "../../errors.js";
import type { JsonObject, JsonValue } from "../../json.js";
import type { AlertsRepository } from "../../store/alerts/alertsRepository.js";
import type { WebhookTargets } from "../alerts/webhookTarget.js";
import { microsToIso } from "../../times.js";
import type { JobContext, JobHandler } from "./handler.js";

/** The job type of an alert's webhook delivery: one job per state change (worker/alerts/alertEvaluator.ts). */
export const ALERT_WEBHOOK_JOB = "alert.webhook";

/** How long one POST may take before the attempt counts as failed. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** The input of a delivery job: the rule and the JSON body posted. */
export interface AlertWebhookInput {
  readonly project_id: string;
  readonly alert_id: string;
  /** Which change of the rule (store/alerts/schema.ts). */
  readonly seq: number;
  readonly body: JsonObject;
}

const inputOf = (input: JsonObject): AlertWebhookInput => {
  const { project_id, alert_id, seq, body } = input;
  if (typeof project_id !== "string" || typeof alert_id !== "string" || typeof seq !== "number" || typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new Error("an alert webhook job needs project_id, alert_id, seq and body");
  }
  return { project_id, alert_id, seq, body };
};

/**
 * Posts a state change of an alert rule to its webhook, once per job: the job runner's claims
 * let one runner of every worker process run it (worker/jobs/runner.ts), and its id derives
 * from the change (one job per change, however many workers saw it). A 2xx answer completes
 * it; anything else (another status, no answer within WEBHOOK_TIMEOUT_MS, a name that does not
 * resolve) is a RetryableError: the runner tries again after 1 s, 2 s, 4 s, ... until
 * JOBS_MAX_ATTEMPTS attempts were made. A URL that is (or resolves to) a private address not
 * in ALERTS_ALLOWED_HOSTS fails at once; a rule deleted before the delivery is not posted.
 * Each POST carries `X-Alert-Delivery-Id` (the job's id), the same on every attempt, so a
 * receiver can drop the repeat of a delivery whose answer was lost.
 */
export function alertWebhookJobs(deps: { alerts: AlertsRepository; targets: WebhookTargets }): Record<string, JobHandler> {
  const deliver = async (raw: JsonObject, ctx: JobContext): Promise<JsonValue> => {
    const input = inputOf(raw);
    const rule = await deps.alerts.find(input.project_id, input.alert_id);
    if (!rule) return { skipped: "the rule was deleted" };
    let refusal: string | null;
    try {
      refusal = await deps.targets.resolvedRefusal(rule.webhookUrl);
    } catch (err) {
      throw new RetryableError(`webhook host did not resolve: ${errorText(err)}`);
    }
    if (refusal !== null) throw new Error(`webhook refused: ${refusal}`);
    // The change as stored, when several workers saw it: the value and time its history shows.
    const stored = await deps.alerts.transition(input.project_id, input.alert_id, input.seq);
    const body = stored ? { ...input.body, value: stored.value, at: microsToIso(stored.at) } : input.body;
    let status: number;
    try {
      const res = await fetch(rule.webhookUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "x-alert-delivery-id": ctx.jobId },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)]),
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch (err) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw new RetryableError(`webhook POST failed: ${errorText(err)}`);
    }
    if (status < 200 || status >= 300) throw new RetryableError(`webhook answered ${status}`);
    return { status, attempt: ctx.attempt };
  };
  return { [ALERT_WEBHOOK_JOB]: deliver };
}
