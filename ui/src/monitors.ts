import type { Json, JsonObject } from "./types";

/**
 * Monitors as the Weave SDK publishes them (docs/resources.md, "Monitors"): objects of class
 * Monitor whose scores are feedback `wandb.runnable.<scorer>` with `trigger_ref` = the
 * monitor version's ref. What the Monitors page and a call's monitor scores share.
 */
export const MONITOR_CLASS = "Monitor";
/** The scorers the server can run for a monitor. */
export const JUDGE_CLASS = "LLMAsAJudgeScorer";
const SCORE_TYPE_PREFIX = "wandb.runnable.";

export interface NewMonitor {
  readonly name: string;
  readonly description: string;
  readonly samplingRate: number;
  readonly scorerRefs: readonly string[];
  /** Op names or op refs; empty: every op. */
  readonly ops: readonly string[];
}

export const objectRef = (projectId: string, objectId: string, digest: string): string => `weave:///${projectId}/object/${objectId}:${digest}`;

/** An op name as the call filter's ref to every version of the op; a ref is kept as it is. */
export const opRef = (projectId: string, op: string): string => (op.startsWith("weave:///") ? op : `weave:///${projectId}/op/${op}:*`);

/** The op name of a call filter's op ref (the ref itself when it is not one). */
export const opOfRef = (ref: string): string => /^weave:\/\/\/[^/]+\/[^/]+\/op\/([^:]+):/.exec(ref)?.[1] ?? ref;

/** The object id a monitor's name is published under: what an object id may not hold becomes "-". */
export const monitorObjectId = (name: string): string => name.trim().replace(/[^\p{L}\p{N}\p{M}\p{Pc}.-]+/gu, "-");

/** The value `/obj/create` takes for a new, active monitor: the Weave SDK's Monitor object. */
export function monitorValue(projectId: string, m: NewMonitor): JsonObject {
  return {
    _type: MONITOR_CLASS, _class_name: MONITOR_CLASS, _bases: ["Object", "BaseModel"],
    name: m.name, description: m.description, sampling_rate: m.samplingRate, scorers: [...m.scorerRefs],
    call_filter: { op_names: m.ops.map((op) => opRef(projectId, op)) },
    active: true,
  };
}

/** The monitor (object id) a score's `trigger_ref` names, or null when it names no object. */
export function monitorOfTrigger(triggerRef: string | null | undefined): string | null {
  const m = /^weave:\/\/\/[^/]+\/[^/]+\/object\/([^:/]+):/.exec(triggerRef ?? "");
  return m?.[1] ? decodeURIComponent(m[1]) : null;
}

/** Whether a feedback is a monitor's score (its trigger names a monitor version). */
export const isMonitorScore = (feedback: { readonly trigger_ref?: string | null }): boolean => monitorOfTrigger(feedback.trigger_ref) !== null;

/** The scorer's name in a score's feedback type (`wandb.runnable.<scorer>`). */
export const scorerOfType = (feedbackType: string): string => (feedbackType.startsWith(SCORE_TYPE_PREFIX) ? feedbackType.slice(SCORE_TYPE_PREFIX.length) : feedbackType);

/**
 * The numbers of a score's output to chart: a number or boolean output itself (as "output"),
 * else the number and boolean fields at its top (`{score: 4, reason}`: score); booleans as 0 or 1.
 */
export function scoreNumbers(output: Json | undefined): [string, number][] {
  const num = (v: Json | undefined) => (typeof v === "number" && Number.isFinite(v) ? v : typeof v === "boolean" ? Number(v) : null);
  const whole = num(output);
  if (whole !== null) return [["output", whole]];
  if (output === null || typeof output !== "object" || Array.isArray(output)) return [];
  return Object.entries(output).flatMap(([key, v]) => {
    const n = num(v);
    return n === null ? [] : [[key, n] as [string, number]];
  });
}
