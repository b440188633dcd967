import type { BatchHandler } from "../queue/queue.js";
import type { TraceEvent } from "../queue/events.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { CallsWriteRepository } from "../store/calls/callsWrite.js";
import { ProjectsRepository } from "../store/projects/projectsRepository.js";
import { CallBatchWriter, type CallsDerivedWriter } from "./callBatchWriter.js";
import { ThreadAggregatesWriter } from "./threadAggregates.js";

/**
 * What resources (services/roles.ts) add to the worker's call batches: called after each
 * stored batch of call events, in this order (aggregates over calls). A module of its own,
 * apart from the resources' routes, so that the log's consumer thread (logWorker.ts) loads
 * only the worker's code.
 */

/** What the worker's parts are made from (a part of roles.ts's ServiceParts). */
export interface WorkerParts {
  readonly store: ClickHouseStore;
}

export const AFTER_CALL_BATCH: readonly { readonly resource: string; readonly writer: (parts: WorkerParts) => CallsDerivedWriter }[] = [
  { resource: "threads", writer: ({ store }) => new ThreadAggregatesWriter(store) },
  {
    resource: "projects",
    writer: ({ store }) => {
      const projects = new ProjectsRepository(store);
      return { write: (calls) => projects.ensure(calls.map((c) => c.project_id)) };
    },
  },
];

/** The worker's handler of call event batches: merge and write calls, then each resource's aggregates. */
export function callBatchHandler(parts: WorkerParts): BatchHandler<TraceEvent> {
  const writer = new CallBatchWriter(new CallsWriteRepository(parts.store), AFTER_CALL_BATCH.map((a) => a.writer(parts)));
  return (events) => writer.write(events);
}
