import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";
import { MonotonicClock, type Clock } from "../../times.js";

/** A project's own settings as stored; null retention = the server's default. */
export interface ProjectSettingsRecord {
  readonly retention_days: number | null;
}

/** `project_settings` (schema.ts): read and replaced whole, the newest version wins. */
export class ProjectSettingsRepository {
  constructor(
    private readonly store: ClickHouseStore,
    private readonly clock: Clock = new MonotonicClock(),
  ) {}

  async find(projectId: string): Promise<ProjectSettingsRecord> {
    const pb = new ParamBuilder();
    const [row] = await this.store.rows<{ retention_days: number | null }>("project_settings_find", {
      sql: `SELECT retention_days FROM project_settings FINAL WHERE project_id = ${pb.str(projectId)} LIMIT 1`,
      params: pb.params,
    });
    return { retention_days: row?.retention_days === null || row?.retention_days === undefined ? null : Number(row.retention_days) };
  }

  async replace(projectId: string, settings: ProjectSettingsRecord): Promise<void> {
    const now = this.clock.nowMicros();
    await this.store.insert("project_settings_replace", "project_settings", [{ project_id: projectId, retention_days: settings.retention_days, updated_at: now, version: now }]);
  }

  /** Every project that set a retention of its own, with it. */
  async retentions(): Promise<Map<string, number>> {
    // Not aliased as the column: ClickHouse would apply the alias in WHERE too.
    const rows = await this.store.rows<{ project_id: string; days: number }>("project_settings_retentions", {
      sql: "SELECT project_id, assumeNotNull(retention_days) AS days FROM project_settings FINAL WHERE retention_days IS NOT NULL",
      params: {},
    });
    return new Map(rows.map((r) => [r.project_id, Number(r.days)]));
  }
}
