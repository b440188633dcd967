import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";
import { nowMicros } from "../../times.js";

export interface RetryRecordKey {
  readonly retryId: string;
  readonly route: string;
  /** The projects the request named, sorted, one per line. */
  readonly projects: string;
}

/** The answers of retried requests (schema.ts); the first recorded answer of a key wins. */
export class RetriesRepository {
  constructor(private readonly store: ClickHouseStore) {}

  async find(key: RetryRecordKey): Promise<string | null> {
    const pb = new ParamBuilder();
    const rows = await this.store.rows<{ answer: string }>("retries_find", {
      sql: `SELECT answer FROM request_retries
            WHERE project_id = ${pb.str(key.projects)} AND retry_id = ${pb.str(key.retryId)} AND route = ${pb.str(key.route)}
            ORDER BY created_at LIMIT 1`,
      params: pb.params,
    });
    return rows[0]?.answer ?? null;
  }

  async record(key: RetryRecordKey, answer: string): Promise<void> {
    await this.store.insert("retries_record", "request_retries", [
      { project_id: key.projects, retry_id: key.retryId, route: key.route, answer, created_at: nowMicros() },
    ]);
  }
}
