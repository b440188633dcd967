import { PeriodicTask } from "../periodicTask.js";
import type { Logger } from "pino";
import { z } from "zod";
import { errorText } from "../../errors.js";
import { derivedUuidv7 } from "../../ids.js";
import type { JsonValue } from "../../json.js";
import type { JobMessage } from "../../queue/jobs.js";
import type { CallsReadRepository } from "../../store/calls/callsRead.js";
import type { JobsRepository } from "../../store/jobs/jobsRepository.js";
import type { MonitorsRepository } from "../../store/monitors/monitorsRepository.js";
import type { JobContext } from "../jobs/handler.js";
import { monitorSpec, sampled, type MonitorSpec } from "./monitorSpec.js";
import type { ScoringQueue } from "./scoringQueue.js";

export const MONITOR_SWEEP_JOB = "monitor.sweep";

/** Most calls one sweep reads (the oldest ended first); more in one window are left to the overlap of the next. */
export const SWEEP_MAX_CALLS = 10_000;
/** A sweep's window reaches back at least this far before its slot: calls stored late (ingest, batching) are still found. */
const MIN_LAG_MS = 5_000;

export const MonitorSweepInput = z.object({
  /** µs: calls that ended in [from, to). */
  from: z.number().int(),
  to: z.number().int(),
});
export type MonitorSweepInput = z.infer<typeof MonitorSweepInput>;

/**
 * The window of slot `slot` (slots of `intervalMs` since the epoch): its own span, the slot
 * before it (skipped when its predecessor was still unfinished) and the lag of late stores.
 */
export function sweepWindow(slot: number, intervalMs: number): { from: number; to: number } {
  const end = slot * intervalMs;
  return { from: (end - 2 * intervalMs - Math.max(intervalMs, MIN_LAG_MS)) * 1000, to: end * 1000 };
}

const sweepJobId = (slot: number, intervalMs: number) => derivedUuidv7(slot * intervalMs, `monitor-sweep\n${intervalMs}\n${slot}`);

/** The sweep of every active monitor for one slot: one job id whichever worker records it. */
export function sweepJob(slot: number, intervalMs: number): JobMessage {
  const input: MonitorSweepInput = sweepWindow(slot, intervalMs);
  return { id: sweepJobId(slot, intervalMs), type: MONITOR_SWEEP_JOB, serial_key: "monitors", input: { ...input }, submitted_at: slot * intervalMs * 1000 };
}

/**
 * The monitors' clock (a worker task): every `intervalMs` (MONITORS_SWEEP_INTERVAL_MS) and at
 * start, when some monitor is active, a sweep job (`monitor.sweep`) is recorded for the current
 * slot. Every worker does the same: the job's id derives from the slot, so the record is one
 * job and the job runner's claim (store/jobs/claims.ts) lets one runner sweep it. One job per
 * slot for all monitors, rather than one per monitor: a claim costs the runner a settle (about
 * a second), so jobs per monitor would queue up behind one another as monitors are added.
 * A slot whose predecessor's sweep is still queued or running is not recorded (sweeps never
 * pile up); each window also covers the slot before it, so one skipped slot loses nothing.
 * Runs never overlap; a failed run is logged and the next one goes on.
 */
export class MonitorSweeper {
  private readonly task: PeriodicTask;

  constructor(
    private readonly deps: { readonly monitors: MonitorsRepository; readonly jobs: JobsRepository },
    private readonly options: { readonly intervalMs: number; readonly log: Logger },
  ) {
    this.task = new PeriodicTask(() => this.runOnce(), { ...options, failure: "monitor sweep scheduling failed; the next run retries" });
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  async runOnce(): Promise<void> {
    const active = (await this.deps.monitors.latestAll()).map(monitorSpec).filter((m) => m.active);
    if (active.length === 0) return;
    const { intervalMs } = this.options;
    const slot = Math.floor(Date.now() / intervalMs);
    const previous = await this.deps.jobs.get(sweepJobId(slot - 1, intervalMs));
    if (previous && (previous.status === "queued" || previous.status === "running")) return;
    await this.deps.jobs.record([sweepJob(slot, intervalMs)]);
  }
}

/**
 * The `monitor.sweep` job: for each monitor whose latest version is active, the calls that
 * match its filter and ended in the window (from the version's creation on), read through the
 * calls read path, sampled by call id, are pushed onto this process's scoring queue. It returns
 * at once: the scoring is the scorer task's (monitorScorer.ts). A monitor whose filter cannot
 * be used, or whose read fails, is logged and the others go on.
 */
export function sweepHandler(deps: { readonly monitors: MonitorsRepository; readonly reads: CallsReadRepository; readonly queue: ScoringQueue; readonly log: Logger }) {
  return async (raw: Record<string, unknown>, ctx: JobContext): Promise<JsonValue> => {
    const input = MonitorSweepInput.parse(raw);
    const active = (await deps.monitors.latestAll()).map(monitorSpec).filter((m) => m.active);
    const out: Record<string, JsonValue> = {};
    for (const spec of active) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (spec.filterError !== null) {
        deps.log.error({ monitor: spec.ref, problem: spec.filterError }, "monitor's call filter cannot be used: nothing is scored");
        out[spec.ref] = { error: spec.filterError };
        continue;
      }
      try {
        out[spec.ref] = await sweepOne(deps, spec, input, ctx.signal);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        deps.log.warn({ monitor: spec.ref, err: errorText(err) }, "monitor sweep failed; the next sweep's window covers it again");
        out[spec.ref] = { error: errorText(err) };
      }
    }
    return out;
  };
}

async function sweepOne(deps: { readonly reads: CallsReadRepository; readonly queue: ScoringQueue }, spec: MonitorSpec, input: MonitorSweepInput, signal: AbortSignal) {
  const calls = deps.reads.stream({
    projectId: spec.projectId,
    filter: spec.opNames.length > 0 ? { op_names: [...spec.opNames] } : null,
    query: spec.query,
    endedWithin: { fromMicros: Math.max(input.from, spec.createdAt), toMicros: input.to },
    columns: ["id", "ended_at"],
    limit: SWEEP_MAX_CALLS,
  });
  let matched = 0;
  const items = [];
  for await (const call of calls) {
    if (signal.aborted) throw signal.reason;
    matched++;
    if (sampled(call.id, spec.samplingRate)) items.push({ monitor: spec, callId: call.id, endedAt: Number(call.ended_at) });
  }
  const dropped = deps.queue.push(items);
  return { matched, sampled: items.length, dropped };
}
