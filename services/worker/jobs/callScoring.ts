import { derivedUuidv7 } from "../../ids.js";
import type { JsonObject, JsonValue } from "../../json.js";
import type { TraceEvent } from "../../queue/events.js";
import { serverCallComplete, type ServerCallPlace } from "../../queue/serverCalls.js";
import { formatRef } from "../../refs.js";
import type { CallRow } from "../../store/calls/callRows.js";
import type { CallsReadRepository } from "../../store/calls/callsRead.js";
import type { FeedbackRepository } from "../../store/feedback/feedbackRepository.js";
import { checkAll } from "../../store/feedback/validate.js";
import { SCORE_MARK } from "../../store/v2/evalCalls.js";
import type { Clock } from "../../times.js";
import type { ChatCompleter } from "./chatCompleter.js";
import { formatTemplate, type ChatMessage, type JudgeScorer, type LlmModel } from "./evalObjects.js";

/**
 * Scoring calls with LLM judges: the one definition shared by the `calls.score` job
 * (evaluationJobs.ts) and the monitors (worker/monitors/): a score call, a root of its own,
 * then feedback `wandb.runnable.<scorer>` on the scored call whose `call_ref` is the score
 * call. The caller derives the score call's id (and, for monitors, the feedback's id) from
 * what identifies the work, so work done twice writes the same rows: a pair whose feedback
 * is already there is skipped before any model runs, a stored score call is not scored again.
 */
export interface Timed<T> {
  readonly value: T;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly summary: JsonObject;
}

/** One scorer on one call, with the ids derived by the caller. */
export interface ScorePair {
  readonly callId: string;
  readonly scorer: JudgeScorer;
  /** The score call's id. */
  readonly id: string;
  /** The feedback's id (a new one when null). */
  readonly feedbackId?: string | null;
  /** What triggered the score (a monitor version's ref), stored as the feedback's `trigger_ref`. */
  readonly triggerRef?: string | null;
}

export interface CallScorerDeps {
  readonly reads: CallsReadRepository;
  readonly feedback: FeedbackRepository;
  readonly writeCalls: (events: readonly TraceEvent[]) => Promise<void>;
  readonly completer: ChatCompleter;
  readonly clock: Clock;
}

const tokensSummary = (model: string, prompt: number, completion: number): JsonObject => ({
  usage: { [model]: { requests: 1, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } },
});

/** The judge's answer: JSON when it is JSON (a fenced ```json block too), else `{"output": text}`. */
export function judgeOutput(text: string): JsonValue {
  const trimmed = text.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, "$1");
  try {
    return JSON.parse(trimmed) as JsonValue;
  } catch {
    return { output: text };
  }
}

export function callRef(projectId: string, id: string): string {
  const [entity, project] = projectId.split("/") as [string, string];
  return formatRef({ kind: "call", entity, project, callId: id, extra: [] });
}

export const parsedJson = (text: string | null): JsonValue => (text === null || text === "" ? null : (JSON.parse(text) as JsonValue));
const withoutSelf = (inputs: JsonObject): JsonObject => Object.fromEntries(Object.entries(inputs).filter(([k]) => k !== "self"));
/** The ms of a UUIDv7 (its first 48 bits): what a derived id was derived at. */
const uuidv7Ms = (id: string): number => parseInt(id.replace(/-/g, "").slice(0, 12), 16) || 0;

export class CallScorer {
  constructor(private readonly deps: CallScorerDeps) {}

  /** The model on a conversation: its template filled from `vars`, then `extra` (a judge's prompt). */
  async predict(model: LlmModel, projectId: string, template: readonly ChatMessage[], vars: JsonObject, signal: AbortSignal, extra: ChatMessage[] = []): Promise<Timed<JsonValue>> {
    let messages = [...template.map((m) => ({ role: m.role, content: formatTemplate(m.content, vars) })), ...extra];
    if (messages.length === 0) messages = [{ role: "user", content: JSON.stringify(vars) }];
    const startedAt = this.deps.clock.nowMicros();
    const answer = await this.deps.completer.complete({ model: model.llmModelId, messages, ...model.params, projectId }, signal);
    const endedAt = this.deps.clock.nowMicros();
    const value = model.responseFormat === "json" ? judgeOutput(answer.text) : answer.text;
    return { value, startedAt, endedAt, summary: tokensSummary(answer.model, answer.promptTokens, answer.completionTokens) };
  }

  /** A judge on `vars` and an output: its scoring prompt filled from both, its answer parsed. */
  async judge(scorer: JudgeScorer, projectId: string, vars: JsonObject, output: JsonValue, signal: AbortSignal): Promise<Timed<JsonValue>> {
    const all: JsonObject = { ...vars, output };
    const prompt = formatTemplate(scorer.scoringPrompt, all);
    const answer = await this.predict({ ...scorer.model, responseFormat: "text" }, projectId, scorer.model.messagesTemplate, all, signal, [{ role: "user", content: prompt }]);
    return { ...answer, value: judgeOutput(String(answer.value)) };
  }

  /**
   * Each pair not scored yet (no feedback on its call whose `call_ref` is its score call):
   * its score call unless stored, then its feedback. Calls not found are skipped. Answers the
   * pairs scored now.
   */
  async scorePairs(projectId: string, wbUserId: string, pairs: readonly ScorePair[], signal: AbortSignal): Promise<number> {
    const callIds = [...new Set(pairs.map((p) => p.callId))];
    const [scored, written, feedback] = await Promise.all([
      this.callsById(projectId, callIds),
      this.callsById(projectId, pairs.map((p) => p.id)),
      this.deps.feedback.forCalls(projectId, callIds),
    ]);
    const given = new Set([...feedback.values()].flat().map((f) => f.call_ref));
    let done = 0;
    for (const pair of pairs) {
      const call = scored.get(pair.callId);
      const ref = callRef(projectId, pair.id);
      if (!call || given.has(ref)) continue;
      if (signal.aborted) throw signal.reason;
      const stored = written.get(pair.id);
      const value = stored ? parsedJson(stored.output) : await this.writeScoreCall(projectId, wbUserId, pair, call, signal);
      const [item] = checkAll([{
        project_id: projectId, weave_ref: callRef(projectId, pair.callId), feedback_type: `wandb.runnable.${pair.scorer.name}`,
        payload: { output: value }, runnable_ref: pair.scorer.ref, call_ref: ref,
        ...(pair.feedbackId ? { id: pair.feedbackId } : {}), ...(pair.triggerRef ? { trigger_ref: pair.triggerRef } : {}),
      }], () => ["input"]);
      await this.deps.feedback.create([item!], wbUserId);
      done++;
    }
    return done;
  }

  private async writeScoreCall(projectId: string, wbUserId: string, pair: ScorePair, call: CallRow, signal: AbortSignal): Promise<JsonValue> {
    const inputs = call.inputs ? withoutSelf(JSON.parse(call.inputs) as JsonObject) : {};
    const output = parsedJson(call.output);
    const judged = await this.judge(pair.scorer, projectId, inputs, output, signal);
    // The trace id and the start time derive from the score call's id alone (its time: a monitor's
    // derives from the scored call's end), the run lasting as long as the judge took: two writers
    // of one score call write one trace and one row (the calls' sort key holds started_at).
    const derivedStart = uuidv7Ms(pair.id) * 1000 || judged.startedAt;
    const score = { ...judged, startedAt: derivedStart, endedAt: derivedStart + (judged.endedAt - judged.startedAt) };
    const place: ServerCallPlace = { projectId, id: pair.id, traceId: derivedUuidv7(uuidv7Ms(pair.id), `${pair.id}/trace`), parentId: null, user: wbUserId };
    await this.deps.writeCalls([serverCallComplete(place, {
      opName: `${pair.scorer.name}.score`,
      inputs: { self: pair.scorer.ref, ...inputs, output },
      attributes: { weave: { [SCORE_MARK]: "true", scorer: pair.scorer.ref, scored_call_id: call.id } },
    }, score, score.value)]);
    return score.value;
  }

  async callsById(projectId: string, ids: readonly string[]): Promise<Map<string, CallRow>> {
    const out = new Map<string, CallRow>();
    if (ids.length === 0) return out;
    for await (const row of this.deps.reads.stream({ projectId, filter: { call_ids: [...ids] } })) out.set(row.id, row);
    return out;
  }
}
