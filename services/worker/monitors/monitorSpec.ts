import { createHash } from "node:crypto";
import { QuerySchema, type Query } from "../../contract/queryExpr.js";
import { NotFoundError, ValidationError } from "../../errors.js";
import { derivedUuidv7 } from "../../ids.js";
import { isJsonObject, type JsonValue } from "../../json.js";
import { formatRef } from "../../refs.js";
import type { MonitorVersion } from "../../store/monitors/monitorsRepository.js";
import type { EvalObjects, JudgeScorer } from "../jobs/evalObjects.js";

/**
 * A monitor as the Weave SDK publishes it (`/obj/create`, `_class_name: "Monitor"`): value
 * `{name, description, sampling_rate, scorers: [refs], call_filter: {op_names, query:
 * {$expr}}, active}` (docs/resources.md, "Monitors").
 */
export interface MonitorSpec {
  /** The version's ref: `weave:///<entity>/<project>/object/<name>:<digest>`, the scores' `trigger_ref`. */
  readonly ref: string;
  readonly projectId: string;
  readonly name: string;
  readonly digest: string;
  /** µs: calls that ended before the version was made are not its business. */
  readonly createdAt: number;
  readonly wbUserId: string;
  readonly active: boolean;
  /** 0..1 (absent: 1). */
  readonly samplingRate: number;
  readonly scorerRefs: readonly string[];
  /** Empty: every op. */
  readonly opNames: readonly string[];
  readonly query: Query | null;
  /** Why the call filter cannot be used (then nothing is swept), or null. */
  readonly filterError: string | null;
}

export function monitorRef(projectId: string, name: string, digest: string): string {
  const [entity, project] = projectId.split("/") as [string, string];
  return formatRef({ kind: "object", entity, project, name, digest, extra: [] });
}

const strings = (v: JsonValue | undefined): string[] | null => (Array.isArray(v) && v.every((s) => typeof s === "string") ? (v as string[]) : null);

export function monitorSpec(version: MonitorVersion): MonitorSpec {
  const val = version.val;
  const filter = isJsonObject(val.call_filter) ? val.call_filter : {};
  const problems: string[] = [];
  const opNames = filter.op_names === undefined || filter.op_names === null ? [] : strings(filter.op_names);
  if (opNames === null) problems.push("call_filter.op_names must be a list of op refs");
  let query: Query | null = null;
  if (filter.query !== undefined && filter.query !== null) {
    const parsed = QuerySchema.safeParse(filter.query);
    if (parsed.success) query = parsed.data as Query;
    else problems.push(`call_filter.query is not a calls query ({"$expr": ...}): ${parsed.error.issues[0]?.message ?? "invalid"}`);
  }
  const rate = val.sampling_rate;
  if (rate !== undefined && rate !== null && (typeof rate !== "number" || !(rate >= 0 && rate <= 1))) problems.push("sampling_rate must be a number from 0 to 1");
  return {
    ref: monitorRef(version.projectId, version.name, version.digest),
    projectId: version.projectId,
    name: version.name,
    digest: version.digest,
    createdAt: version.createdAt,
    wbUserId: version.wbUserId,
    active: val.active === true,
    samplingRate: typeof rate === "number" && rate >= 0 && rate <= 1 ? rate : 1,
    scorerRefs: strings(val.scorers) ?? [],
    opNames: opNames ?? [],
    query,
    filterError: problems.length > 0 ? problems.join("; ") : null,
  };
}

/**
 * Whether a call is in a monitor's sample: a hash of the call id alone, as a fraction of
 * 2^48, below the rate. The same call is decided the same by every worker, on every sweep
 * and redelivery; a rate of 1 takes every call, 0 none.
 */
export function sampled(callId: string, rate: number): boolean {
  const fraction = createHash("sha256").update(callId).digest().readUIntBE(0, 6) / 2 ** 48;
  return fraction < rate;
}

/** The ids of one score (monitor version, call, scorer): the same wherever and however often it is computed. */
export function scoreIds(monitorRefText: string, callId: string, scorerRef: string, endedAtMicros: number): { scoreCallId: string; feedbackId: string } {
  const ms = Math.floor(endedAtMicros / 1000);
  const key = `${monitorRefText}\n${callId}\n${scorerRef}`;
  return { scoreCallId: derivedUuidv7(ms, `monitor-score\n${key}`), feedbackId: derivedUuidv7(ms, `monitor-feedback\n${key}`) };
}

export interface UnsupportedScorer {
  readonly ref: string;
  readonly reason: string;
}

/** The monitor's scorers the server can run (LLMAsAJudgeScorer objects of the project), and why each other one cannot run. */
export async function resolveScorers(objects: EvalObjects, spec: Pick<MonitorSpec, "projectId" | "scorerRefs">): Promise<{ runnable: JudgeScorer[]; unsupported: UnsupportedScorer[] }> {
  const runnable: JudgeScorer[] = [];
  const unsupported: UnsupportedScorer[] = [];
  for (const [i, ref] of spec.scorerRefs.entries()) {
    try {
      runnable.push(await objects.scorer(spec.projectId, ref, ["scorers", i]));
    } catch (err) {
      // A store that fails is not the scorer's fault: only what the objects say is reported.
      if (!(err instanceof ValidationError) && !(err instanceof NotFoundError)) throw err;
      unsupported.push({ ref, reason: reasonOf(err) });
    }
  }
  return { runnable, unsupported };
}

function reasonOf(err: ValidationError | NotFoundError): string {
  if (err instanceof ValidationError) return err.detail.map((i) => i.msg).join("; ");
  return err.message;
}
