import type { BatchHandler } from "../queue/queue.js";
import { callKey, isOtlpExport, isOtlpLogRecords, type CallCompleteEvent, type CallEvent, type OtlpExportEvent, type TraceEvent } from "../queue/events.js";
import { exportCalls, exportedCalls } from "../otlp/exportEvent.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { CallsWriteRepository } from "../store/calls/callsWrite.js";
import { ProjectsRepository } from "../store/projects/projectsRepository.js";
import { OtelLogsRepository } from "../store/otelLogs/otelLogsRepository.js";
import { CallBatchWriter, type CallsDerivedWriter } from "./callBatchWriter.js";
import { ThreadAggregatesWriter } from "./threadAggregates.js";

/**
 * What resources (services/resources.ts) add to the worker's call batches: called after each
 * stored batch of call events, in this order (aggregates over calls). A module of its own,
 * apart from the resources' routes, so that the log's consumer thread (logWorker.ts) loads
 * only the worker's code.
 */

/** What the worker's parts are made from (a part of resources.ts's ServiceParts). */
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

/**
 * Calls of logged OTLP exports written at once at most (about: exports are not split): a batch
 * of exports can hold many thousands of spans, and their rows all at once would hold far more
 * memory than the log bytes they came from. Smaller inserts cost ClickHouse more CPU per span, larger
 * ones raise the service's peak RSS (with writer threads, each holds its own); the OTLP bench
 * (`npx tsx bench/run.ts otlp`) shows both, its figures in docs/benchmarks.md.
 */
export const EXPORTED_CALLS_PER_WRITE = 4_096;

/**
 * The worker's handler of call event batches: merge and write calls, then each resource's
 * aggregates. OTLP exports become their spans' calls here, written in parts of about
 * `EXPORTED_CALLS_PER_WRITE` (the batch is stored once all its parts are); a batch of exports
 * alone has each span's row made as soon as its call is (`writeExports`).
 */
export function callBatchHandler(parts: WorkerParts): BatchHandler<TraceEvent> {
  const writer = new CallBatchWriter(new CallsWriteRepository(parts.store), AFTER_CALL_BATCH.map((a) => a.writer(parts)));
  const logs = new OtelLogsRepository(parts.store);
  return async (events) => {
    const logRecords = events.filter(isOtlpLogRecords);
    const callEvents = logRecords.length === 0 ? events : events.filter((e) => !isOtlpLogRecords(e));
    // Log records are read beside their calls, whichever is stored first: no order between the two.
    await logs.insert(logRecords);
    if (callEvents.length > 0 && callEvents.every(isOtlpExport)) return writeExports(writer, callEvents);
    for (const part of callEventParts(callEvents)) await writer.write(part);
  };
}

/**
 * A batch of OTLP exports, written in parts of about `EXPORTED_CALLS_PER_WRITE` calls (by their
 * accepted spans), each span's row made as soon as its call is (`CallBatchWriter.writeWhole`).
 */
export async function writeExports(writer: CallBatchWriter, exports: readonly OtlpExportEvent[]): Promise<void> {
  for (let from = 0; from < exports.length; ) {
    let to = from;
    let spans = 0;
    while (to < exports.length && spans < EXPORTED_CALLS_PER_WRITE) spans += exports[to++]!.spans;
    const part = exports.slice(from, to);
    await writer.writeWhole(callsOf(part), spans, (keys) => [...callsOf(part)].filter((call) => keys.has(callKey(call))));
    from = to;
  }
}

function* callsOf(exports: readonly OtlpExportEvent[]): Generator<CallCompleteEvent> {
  for (const event of exports) yield* exportCalls(event);
}

const hasNoExports = (events: readonly TraceEvent[]): events is readonly CallEvent[] => !events.some((e) => isOtlpExport(e) || isOtlpLogRecords(e));

/** The batch as call events, OTLP exports mapped (log records left out), in parts (one part when it holds neither). */
export function* callEventParts(events: readonly TraceEvent[]): Generator<readonly CallEvent[]> {
  if (hasNoExports(events)) {
    yield events;
    return;
  }
  let part: CallEvent[] = [];
  for (const event of events) {
    if (isOtlpLogRecords(event)) continue;
    if (!isOtlpExport(event)) part.push(event);
    else for (const call of exportedCalls(event)) part.push(call);
    if (part.length >= EXPORTED_CALLS_PER_WRITE) {
      yield part;
      part = [];
    }
  }
  if (part.length > 0) yield part;
}
