import type { Logger } from "pino";
import { z } from "zod";
import { errorText } from "../../errors.js";
import { derivedUuidv7 } from "../../ids.js";
import type { JsonValue } from "../../json.js";
import type { JobMessage } from "../../queue/jobs.js";
import type { CallsReadRepository } from "../../store/calls/callsRead.js";
import type { JobsRepository } from "../../store/jobs/jobsRepository.js";
import type { MonitorsRepository } from "../../store/monitors/monitorsRepository.js";
import { nowMicros } from "../../times.js";
import type { JobContext } from "../jobs/handler.js";
import { monitorSpec, sampled, type MonitorSpec } from "./monitorSpec.js";
import type { ScoringQueue } from "./scoringQueue.js";

export const MONITOR_SWEEP_JOB = "monitor.sweep";

/** Most calls one sweep reads (the oldest ended first); more in one window are left to the overlap of the next. */
export const SWEEP_MAX_CALLS = 10_000;
/** A sweep's window reaches back at least this far before its slot: calls stored late (ingest, batching) are still found. */
const MIN_LAG_MS = 5_000;

export const MonitorSweepInput = z.object({
  project_id: z.string(),
  name: z.string(),
  digest: z.string(),
  /** µs: calls that ended in [from, to). */
  from: z.number().int(),
  to: z.number().int(),
});
export type MonitorSweepInput = z.infer<typeof MonitorSweepInput>;

/** The window of slot `slot` (slots of `intervalMs` since the epoch): its own slot's span and the lag before it. */
export function sweepWindow(slot: number, intervalMs: number): { from: number; to: number } {
  const end = slot * intervalMs;
  return { from: (end - intervalMs - Math.max(intervalMs, MIN_LAG_MS)) * 1000, to: end * 1000 };
}

/** The sweep of a monitor version's slot: one job id whichever worker records it. */
export function sweepJob(spec: MonitorSpec, slot: number, intervalMs: number): JobMessage {
  const input: MonitorSweepInput = { project_id: spec.projectId, name: spec.name, digest: spec.digest, ...sweepWindow(slot, intervalMs) };
  return {
    id: derivedUuidv7(slot * intervalMs, `monitor-sweep\n${spec.ref}\n${slot}`),
    type: MONITOR_SWEEP_JOB,
    serial_key: `monitor:${spec.projectId}/${spec.name}`,
    input: { ...input },
    submitted_at: slot * intervalMs * 1000,
  };
}

/**
 * The monitors' clock (a worker task): every `intervalMs` (MONITORS_SWEEP_INTERVAL_MS) and at
 * start, a sweep job (`monitor.sweep`) is recorded for each active monitor's latest version and
 * the current slot. Every worker does the same: the job's id derives from (monitor version,
 * slot), so the record is one job and the job runner's claim (store/jobs/claims.ts) lets one
 * runner sweep it. Runs never overlap; a failed run is logged and the next one goes on.
 */
export class MonitorSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly deps: { readonly monitors: MonitorsRepository; readonly jobs: JobsRepository },
    private readonly options: { readonly intervalMs: number; readonly log: Logger },
  ) {}

  start(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  private tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.runOnce()
      .catch((err: unknown) => this.options.log.warn({ err: errorText(err) }, "monitor sweep scheduling failed; the next run retries"))
      .finally(() => {
        this.running = null;
      });
  }

  async runOnce(): Promise<void> {
    const active = (await this.deps.monitors.latestAll()).map(monitorSpec).filter((m) => m.active);
    if (active.length === 0) return;
    const slot = Math.floor(Date.now() / this.options.intervalMs);
    await this.deps.jobs.record(active.map((m) => sweepJob(m, slot, this.options.intervalMs)));
  }
}

/**
 * The `monitor.sweep` job: if the version is still the monitor's latest and active, the calls
 * that match its filter and ended in the window (from the version's creation on), read through
 * the calls read path, sampled by call id, are pushed onto this process's scoring queue. It
 * returns at once: the scoring is the drainer's (monitorScorer.ts).
 */
export function sweepHandler(deps: { readonly monitors: MonitorsRepository; readonly reads: CallsReadRepository; readonly queue: ScoringQueue; readonly log: Logger }) {
  return async (raw: Record<string, unknown>, ctx: JobContext): Promise<JsonValue> => {
    const input = MonitorSweepInput.parse(raw);
    const latest = await deps.monitors.latest(input.project_id, input.name);
    const spec = latest ? monitorSpec(latest) : null;
    if (!spec || spec.digest !== input.digest || !spec.active) return { swept: false, reason: "not the monitor's active latest version" };
    if (spec.filterError !== null) {
      deps.log.error({ monitor: spec.ref, problem: spec.filterError }, "monitor's call filter cannot be used: nothing is scored");
      return { swept: false, reason: spec.filterError };
    }
    const calls = deps.reads.stream({
      projectId: spec.projectId,
      filter: spec.opNames.length > 0 ? { op_names: [...spec.opNames] } : null,
      query: spec.query,
      endedWithin: { fromMicros: Math.max(input.from, spec.createdAt), toMicros: Math.min(input.to, nowMicros()) },
      columns: ["id", "ended_at"],
      limit: SWEEP_MAX_CALLS,
    });
    let matched = 0;
    const items = [];
    for await (const call of calls) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      matched++;
      if (sampled(call.id, spec.samplingRate)) items.push({ monitor: spec, callId: call.id, endedAt: Number(call.ended_at) });
    }
    const dropped = deps.queue.push(items);
    return { swept: true, matched, sampled: items.length, dropped };
  };
}
