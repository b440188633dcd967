import type { Logger } from "pino";
import { errorText } from "../../errors.js";
import { monitorScoringItems } from "../../metrics.js";
import type { CallScorer } from "../jobs/callScoring.js";
import type { EvalObjects, JudgeScorer } from "../jobs/evalObjects.js";
import { resolveScorers, scoreIds, type UnsupportedScorer } from "./monitorSpec.js";
import type { ScoringItem, ScoringQueue } from "./scoringQueue.js";

/** How long a monitor version's resolved scorers are reused before they are read again. */
const SCORERS_TTL_MS = 30_000;
/** Monitor versions remembered (resolved scorers, errors logged): forgotten all at once past it. */
const REMEMBERED_MAX = 1_000;
/** The drainer's longest sleep with nothing queued. */
const IDLE_WAIT_MS = 1_000;

interface Resolved {
  readonly at: number;
  readonly runnable: readonly JudgeScorer[];
  readonly unsupported: readonly UnsupportedScorer[];
}

/**
 * The monitors' scoring (a worker task): takes the scoring queue's items one at a time and runs
 * each runnable scorer of the item's monitor version on its call through the scoring of
 * `calls.score` (worker/jobs/callScoring.ts), with ids derived from (monitor version, call, scorer):
 * a score already written is skipped before the model runs, and one written twice (two workers
 * racing on one call) is one feedback under FINAL. A scorer that cannot run is logged as an
 * error once per monitor version and answered by `/monitors/status`. A failed score is logged
 * and counted, and not retried (a later sweep's overlap may find the call again).
 */
export class MonitorScorer {
  private readonly scorers = new Map<string, Resolved>();
  private readonly reported = new Set<string>();
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly deps: { readonly queue: ScoringQueue; readonly scorer: CallScorer; readonly objects: EvalObjects },
    private readonly options: { readonly log: Logger },
  ) {}

  start(): void {
    this.loop ??= this.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort(new Error("monitor scoring stopped"));
    this.deps.queue.wake();
    await this.loop;
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      const item = this.deps.queue.shift();
      if (!item) {
        await this.deps.queue.wait(IDLE_WAIT_MS);
        continue;
      }
      monitorScoringItems.inc({ outcome: await this.score(item) });
    }
  }

  /** One item; answers its outcome (the metric's label). */
  async score(item: ScoringItem): Promise<"scored" | "already" | "failed" | "none"> {
    const { monitor, callId } = item;
    try {
      const { runnable } = await this.resolved(item);
      if (runnable.length === 0) return "none";
      const pairs = runnable.map((scorer) => {
        const ids = scoreIds(monitor.ref, callId, scorer.ref, item.endedAt);
        return { callId, scorer, id: ids.scoreCallId, feedbackId: ids.feedbackId, triggerRef: monitor.ref };
      });
      const done = await this.deps.scorer.scorePairs(monitor.projectId, monitor.wbUserId, pairs, this.abort.signal);
      return done > 0 ? "scored" : "already";
    } catch (err) {
      if (!this.stopped) this.options.log.warn({ monitor: monitor.ref, call: callId, err: errorText(err) }, "monitor scoring of a call failed");
      return "failed";
    }
  }

  private async resolved(item: ScoringItem): Promise<Resolved> {
    const ref = item.monitor.ref;
    const cached = this.scorers.get(ref);
    if (cached && Date.now() - cached.at < SCORERS_TTL_MS) return cached;
    const fresh = { at: Date.now(), ...(await resolveScorers(this.deps.objects, item.monitor)) };
    if (this.scorers.size >= REMEMBERED_MAX) this.scorers.clear();
    if (this.reported.size >= REMEMBERED_MAX) this.reported.clear();
    this.scorers.set(ref, fresh);
    for (const u of fresh.unsupported) {
      const key = `${ref}\n${u.ref}`;
      if (this.reported.has(key)) continue;
      this.reported.add(key);
      this.options.log.error({ monitor: ref, scorer: u.ref, reason: u.reason }, "monitor scorer cannot run here: it scores nothing (see /monitors/status)");
    }
    return fresh;
  }
}
