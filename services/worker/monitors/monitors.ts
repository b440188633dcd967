import type { Logger } from "pino";
import type { TraceEvent } from "../../queue/events.js";
import { CallsReadRepository } from "../../store/calls/callsRead.js";
import type { ClickHouseStore } from "../../store/clickhouse.js";
import { FeedbackRepository } from "../../store/feedback/feedbackRepository.js";
import { JobsRepository } from "../../store/jobs/jobsRepository.js";
import { MonitorsRepository } from "../../store/monitors/monitorsRepository.js";
import type { ProjectRetention } from "../../store/projects/retention.js";
import { MonotonicClock } from "../../times.js";
import type { ChatCompleter } from "../jobs/chatCompleter.js";
import { CallScorer } from "../jobs/callScoring.js";
import { EvalObjects } from "../jobs/evalObjects.js";
import type { JobHandler } from "../jobs/handler.js";
import { MonitorScorer } from "./monitorScorer.js";
import { MONITOR_SWEEP_JOB, MonitorSweeper, sweepHandler } from "./monitorSweeper.js";
import { ScoringQueue } from "./scoringQueue.js";

export interface MonitorsDeps {
  readonly store: ClickHouseStore;
  readonly retention: ProjectRetention;
  readonly writeCalls: (events: readonly TraceEvent[]) => Promise<void>;
  readonly completer: ChatCompleter;
  readonly log: Logger;
  readonly sweepIntervalMs: number;
  readonly queueSize: number;
}

/**
 * The monitors of one worker process: the sweeper and the scorer (its worker tasks), the
 * sweep job's handler, and the bounded queue between them (docs/resources.md, "Monitors").
 * The handler and the tasks must live in the same process: the handler fills the queue the
 * scorer drains.
 */
export class Monitors {
  readonly queue: ScoringQueue;
  readonly sweeper: MonitorSweeper;
  readonly scorer: MonitorScorer;
  readonly handlers: Readonly<Record<string, JobHandler>>;

  constructor(deps: MonitorsDeps) {
    const monitors = new MonitorsRepository(deps.store);
    const reads = new CallsReadRepository(deps.store, deps.retention);
    this.queue = new ScoringQueue(deps.queueSize);
    this.sweeper = new MonitorSweeper({ monitors, jobs: new JobsRepository(deps.store) }, { intervalMs: deps.sweepIntervalMs, log: deps.log });
    const scorer = new CallScorer({ reads, feedback: new FeedbackRepository(deps.store), writeCalls: deps.writeCalls, completer: deps.completer, clock: new MonotonicClock() });
    this.scorer = new MonitorScorer({ queue: this.queue, scorer, objects: new EvalObjects(deps.store) }, { log: deps.log });
    this.handlers = { [MONITOR_SWEEP_JOB]: sweepHandler({ monitors, reads, queue: this.queue, log: deps.log }) };
  }
}
