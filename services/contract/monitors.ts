import { BODY_PROJECT, operation } from "./operation.js";
import { ProjectId } from "./common.js";
import { z } from "./zod.js";

/**
 * Monitors (docs/resources.md, "Monitors") are objects the Weave SDK publishes with
 * `/obj/create` (`_class_name: "Monitor"`); the worker scores the calls they match. This is
 * the one operation of their own: what a monitor version scored and what it cannot score.
 */

const TAG = "Monitors";

export const MonitorStatusReq = z
  .object({
    project_id: ProjectId,
    monitor_ref: z.string().min(1).max(2048).openapi({ description: "A monitor version's ref: weave:///<entity>/<project>/object/<name>:<digest>" }),
  })
  .openapi("MonitorStatusReq");

export const UnsupportedScorer = z
  .object({ ref: z.string(), reason: z.string().openapi({ description: "Why the server cannot run it (another class than LLMAsAJudgeScorer, a ref naming nothing...)" }) })
  .openapi("MonitorUnsupportedScorer");

export const MonitorStatusRes = z
  .object({
    active: z.boolean().openapi({ description: "Whether this version is the monitor's latest and is active: calls ending now are scored by it" }),
    scored: z.number().int().openapi({ description: "Scores written for this version: feedback whose trigger_ref is monitor_ref" }),
    last_scored_at: z.string().nullable().openapi({ description: "When the newest of them was written (ISO 8601), null when none" }),
    unsupported_scorers: z.array(UnsupportedScorer).openapi({ description: "The version's scorers that score nothing, with the reason" }),
    filter_error: z.string().nullable().openapi({ description: "Why the version's call_filter cannot be used (then it scores nothing), or null" }),
  })
  .openapi("MonitorStatusRes");

export const monitorStatusOp = operation({
  id: "monitors_status", method: "post", path: "/monitors/status", summary: "What a monitor version scored, and the scorers it cannot run", tag: TAG,
  body: MonitorStatusReq, response: MonitorStatusRes, role: "viewer", scope: BODY_PROJECT,
});
