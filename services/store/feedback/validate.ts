import type { FeedbackCreateReq } from "../../contract/feedback.js";
import { ValidationError, type ValidationIssue } from "../../errors.js";
import { processPayload, type Payload } from "./payload.js";
import { feedbackTarget } from "./refs.js";

/** A create request that passed every rule, with its processed payload. */
export interface ValidFeedback {
  readonly req: FeedbackCreateReq;
  readonly payload: Payload;
}

const REF_FIELDS = ["annotation_ref", "runnable_ref", "call_ref", "trigger_ref"] as const;

/**
 * The rules beyond the request's shape: `weave_ref` (and any other ref given) must be a
 * weave:/// ref of the request's project; the payload must fit its type (payload.ts).
 * Returns the issues found, located under `loc` (e.g. ["body"] or ["body", "batch", 3]).
 */
export function checkFeedback(req: FeedbackCreateReq, loc: (string | number)[]): ValidFeedback | ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const checkRef = (field: "weave_ref" | (typeof REF_FIELDS)[number], ref: string) => {
    const parsed = feedbackTarget(ref);
    if (!parsed) issues.push({ loc: [...loc, field], msg: "must be a weave:/// ref: weave:///<entity>/<project>/<kind>/<name>", type: "value_error" });
    else if (parsed.projectId !== req.project_id) {
      issues.push({ loc: [...loc, field], msg: `the ref belongs to project ${parsed.projectId}, not ${req.project_id}`, type: "value_error" });
    }
  };
  checkRef("weave_ref", req.weave_ref);
  for (const field of REF_FIELDS) {
    const ref = req[field];
    if (ref) checkRef(field, ref);
  }
  const processed = processPayload(req.feedback_type, req.payload, loc);
  if (!processed.ok) issues.push(...processed.issues);
  return issues.length > 0 || !processed.ok ? issues : { req, payload: processed.payload };
}

/** Checks every request before anything is written; throws one ValidationError with all issues. */
export function checkAll(reqs: readonly FeedbackCreateReq[], locOf: (index: number) => (string | number)[]): ValidFeedback[] {
  const valid: ValidFeedback[] = [];
  const issues: ValidationIssue[] = [];
  reqs.forEach((req, i) => {
    const checked = checkFeedback(req, locOf(i));
    if (Array.isArray(checked)) issues.push(...checked);
    else valid.push(checked);
  });
  if (issues.length > 0) throw new ValidationError(issues);
  return valid;
}
