import { BODY_PROJECT, operation } from "./operation.js";
import { ProjectId } from "./common.js";
import { z } from "./zod.js";

/**
 * Alert rules (docs/resources.md, "Alerts"): a metric of a project's calls (or of a monitor's
 * scores) over a sliding window, compared with a threshold; the worker evaluates each rule and
 * posts to its webhook when it crosses into `firing` and back to `ok`. Admin operations.
 */

const TAG = "Alerts";

export const ALERT_METRICS = ["error_rate", "latency_p99_ms", "cost_usd", "tokens", "score_mean"] as const;
export type AlertMetric = (typeof ALERT_METRICS)[number];
export const ALERT_STATES = ["ok", "firing"] as const;
export type AlertState = (typeof ALERT_STATES)[number];
/** Most state changes `/alerts/query` answers per rule, latest first. */
export const ALERT_HISTORY_LIMIT = 20;

/** `http://` or `https://`, with a host; the host's address is checked by the route (ALERTS_ALLOWED_HOSTS). */
const WebhookUrl = z
  .string()
  .max(2048)
  .refine((text) => {
    try {
      const url = new URL(text);
      return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
    } catch {
      return false;
    }
  }, "must be an http(s) URL")
  .openapi({ example: "https://hooks.example.com/alerts" });

export const AlertCreateReq = z
  .object({
    project_id: ProjectId,
    name: z.string().trim().min(1).max(256),
    metric: z.enum(ALERT_METRICS).openapi({
      description:
        "`error_rate`: calls ended in the window with an exception ÷ calls ended in it; `latency_p99_ms`: nearest-rank p99 of their latencies; `cost_usd`, `tokens`: sums of their own usage; `score_mean`: mean of the monitor's numeric scores written in the window (needs `monitor_ref` and `scorer`)",
    }),
    window_minutes: z.number().int().min(1).max(10_080),
    comparison: z.enum(["gt", "lt"]).openapi({ description: "`gt`: firing while the value is above the threshold; `lt`: below" }),
    threshold: z.number().finite(),
    op_names: z.array(z.string().min(1).max(1024)).max(100).nullish().openapi({ description: "Counts only calls of these ops (op refs or plain names, as the calls filter)" }),
    monitor_ref: z.string().min(1).max(2048).nullish().openapi({ description: "`score_mean`: the `trigger_ref` of the scores' feedback" }),
    scorer: z.string().min(1).max(256).nullish().openapi({ description: "`score_mean`: the feedback type read is `wandb.runnable.<scorer>`" }),
    webhook_url: WebhookUrl,
  })
  .superRefine((rule, ctx) => {
    if (rule.metric !== "score_mean") return;
    if (!rule.monitor_ref) ctx.addIssue({ code: "custom", path: ["monitor_ref"], message: "score_mean needs monitor_ref" });
    if (!rule.scorer) ctx.addIssue({ code: "custom", path: ["scorer"], message: "score_mean needs scorer" });
  })
  .openapi("AlertCreateReq");
export type AlertCreateReq = z.infer<typeof AlertCreateReq>;

export const AlertCreateRes = z.object({ id: z.string() }).openapi("AlertCreateRes");

const Timestamp = z.string().openapi({ description: "ISO 8601, UTC, microseconds" });

export const AlertHistoryEntry = z.object({ state: z.enum(ALERT_STATES), value: z.number().nullable(), at: Timestamp }).openapi("AlertHistoryEntry");

export const AlertRule = z
  .object({
    id: z.string(),
    name: z.string(),
    metric: z.enum(ALERT_METRICS),
    window_minutes: z.number().int(),
    comparison: z.enum(["gt", "lt"]),
    threshold: z.number(),
    op_names: z.array(z.string()).nullable(),
    monitor_ref: z.string().nullable(),
    scorer: z.string().nullable(),
    webhook_url: z.string(),
    state: z.enum(ALERT_STATES),
    last_value: z.number().nullable().openapi({ description: "The value at the last evaluation (null: no data in the window, or not evaluated yet)" }),
    last_evaluated_at: Timestamp.nullable(),
    history: z.array(AlertHistoryEntry).openapi({ description: `The rule's state changes, latest first (at most ${ALERT_HISTORY_LIMIT})` }),
  })
  .openapi("AlertRule");
export type AlertRule = z.infer<typeof AlertRule>;

export const AlertsQueryReq = z.object({ project_id: ProjectId }).openapi("AlertsQueryReq");
export const AlertsQueryRes = z.object({ alerts: z.array(AlertRule).openapi({ description: "The project's rules, oldest first" }) }).openapi("AlertsQueryRes");

export const AlertDeleteReq = z.object({ project_id: ProjectId, id: z.string().min(1).max(64) }).openapi("AlertDeleteReq");
export const AlertDeleteRes = z.object({}).openapi("AlertDeleteRes");

export const alertCreateOp = operation({
  id: "alerts_create", method: "post", path: "/alerts/create", summary: "Create an alert rule posting to a webhook", tag: TAG,
  body: AlertCreateReq, response: AlertCreateRes, role: "admin", scope: BODY_PROJECT,
});
export const alertsQueryOp = operation({
  id: "alerts_query", method: "post", path: "/alerts/query", summary: "A project's alert rules with their state and recent state changes", tag: TAG,
  body: AlertsQueryReq, response: AlertsQueryRes, role: "admin", scope: BODY_PROJECT,
});
export const alertDeleteOp = operation({
  id: "alerts_delete", method: "post", path: "/alerts/delete", summary: "Delete an alert rule (404 when unknown); it is not evaluated any more", tag: TAG,
  body: AlertDeleteReq, response: AlertDeleteRes, role: "admin", scope: BODY_PROJECT,
});
