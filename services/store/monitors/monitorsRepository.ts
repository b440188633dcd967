import { isJsonObject, type JsonObject } from "../../json.js";
import type { ClickHouseStore } from "../clickhouse.js";
import { latestMonitorsQuery, MONITOR_CLASS } from "./monitorsQuery.js";

/** A monitor's latest live version, as stored. */
export interface MonitorVersion {
  readonly projectId: string;
  /** Its object id. */
  readonly name: string;
  readonly digest: string;
  /** µs: when the version was created. */
  readonly createdAt: number;
  readonly val: JsonObject;
  /** Who created the version: the user its scores are written as. */
  readonly wbUserId: string;
}

interface Row {
  project_id: string;
  object_id: string;
  created_at: string | number;
  digest: string;
  leaf_object_class: string;
  val: string;
  wb_user_id: string;
}

/** Monitors are objects (store/objects): this reads the versions that count, their latest live ones. */
export class MonitorsRepository {
  constructor(private readonly store: ClickHouseStore) {}

  /** Every project's monitors, each at its latest live version. */
  async latestAll(): Promise<MonitorVersion[]> {
    return this.read(null);
  }

  /** One monitor's latest live version; null when it has none (never made, or deleted). */
  async latest(projectId: string, name: string): Promise<MonitorVersion | null> {
    return (await this.read({ projectId, name }))[0] ?? null;
  }

  private async read(only: { projectId: string; name: string } | null): Promise<MonitorVersion[]> {
    const rows = await this.store.rows<Row>("monitors_latest", latestMonitorsQuery(only));
    return rows.flatMap((row) => {
      const val: unknown = JSON.parse(row.val);
      if (row.leaf_object_class !== MONITOR_CLASS || !isJsonObject(val)) return [];
      return [{ projectId: row.project_id, name: row.object_id, digest: row.digest, createdAt: Number(row.created_at), val: val as JsonObject, wbUserId: row.wb_user_id }];
    });
  }
}
