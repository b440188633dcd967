import { ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/** A call's OTLP log records (/otel/v1/logs): a span's records are kept with its call. */
export const CallLogRecordsReq = z
  .object({
    project_id: ProjectId,
    call_id: z.string().min(1).openapi({ description: "The call's id: for an OTLP span, its span id" }),
  })
  .openapi("CallLogRecordsReq");
export type CallLogRecordsReq = z.infer<typeof CallLogRecordsReq>;

export const CallLogRecord = z
  .object({
    time: z.string().openapi({ description: "The record's time, else when it was observed (ISO 8601, microseconds)" }),
    trace_id: z.string(),
    event_name: z.string().openapi({ description: "The event's name (e.g. `gen_ai.user.message`); empty for a plain log record" }),
    severity_number: z.number().int(),
    severity_text: z.string(),
    body: z.unknown().openapi({ description: "The record's body as JSON" }),
    attributes: z.record(z.string(), z.unknown()),
    scope_name: z.string(),
  })
  .openapi("CallLogRecord");

export const CallLogRecordsRes = z
  .object({ records: z.array(CallLogRecord).openapi({ description: "Oldest first; at most 1000" }) })
  .openapi("CallLogRecordsRes");

export const callLogRecordsOp = operation({
  id: "call_log_records",
  method: "post",
  path: "/call/log_records",
  summary: "The OTLP log records of a call's span, oldest first",
  tag: "OpenTelemetry",
  body: CallLogRecordsReq,
  role: "viewer",
  scope: BODY_PROJECT,
  response: CallLogRecordsRes,
});
