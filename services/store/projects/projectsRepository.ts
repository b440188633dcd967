import type { ClickHouseStore } from "../clickhouse.js";
import { ParamBuilder } from "../sql.js";
import { nowMicros } from "../../times.js";

/** Tables of the resources whose writes make a project exist without going through the worker. */
const WRITTEN_TABLES = ["objects", "tables", "files"] as const;

export interface ProjectRecord {
  readonly entity: string;
  readonly name: string;
  readonly description: string | null;
}

const splitProjectId = (projectId: string): { entity: string; name: string } => {
  const slash = projectId.indexOf("/");
  return { entity: projectId.slice(0, slash), name: projectId.slice(slash + 1) };
};

/**
 * Projects: created explicitly (UpsertModel) or by their first write. `ensure` remembers
 * what this process already wrote, so the worker's per-batch call costs one set lookup per
 * project after the first.
 */
export class ProjectsRepository {
  private readonly known = new Set<string>();

  constructor(private readonly store: ClickHouseStore) {}

  /**
   * The project, when UpsertModel created it or anything was written to it: calls (recorded
   * in `projects` by the worker), or objects, tables or files (looked up in their tables,
   * whose sort keys start with the project).
   */
  async find(entity: string, name: string): Promise<ProjectRecord | null> {
    const pb = new ParamBuilder();
    const [row] = await this.store.rows<ProjectRecord>("projects_find", {
      sql: `SELECT entity, name, description FROM projects FINAL WHERE entity = ${pb.str(entity)} AND name = ${pb.str(name)} LIMIT 1`,
      params: pb.params,
    });
    if (row) return row;
    return (await this.holdsData(`${entity}/${name}`)) ? { entity, name, description: null } : null;
  }

  private async holdsData(projectId: string): Promise<boolean> {
    const pb = new ParamBuilder();
    const project = pb.str(projectId);
    const rows = await this.store.rows<{ project_id: string }>("projects_holds_data", {
      sql: WRITTEN_TABLES.map((table) => `SELECT project_id FROM (SELECT project_id FROM ${table} WHERE project_id = ${project} LIMIT 1)`).join(" UNION ALL "),
      params: pb.params,
    });
    return rows.length > 0;
  }

  /** Creates the project, or updates its description when one is given. */
  async upsert(entity: string, name: string, description: string | null): Promise<ProjectRecord> {
    const existing = await this.find(entity, name);
    const now = nowMicros();
    const record = { entity, name, description: description ?? existing?.description ?? null };
    await this.store.insert("projects_upsert", "projects", [{ ...record, created_at: now, version: now }]);
    this.known.add(`${entity}/${name}`);
    return record;
  }

  /**
   * Records projects that received data, once per process. Rows written here have version
   * 0, so a project created by UpsertModel (version = its time) keeps its description.
   */
  async ensure(projectIds: Iterable<string>): Promise<void> {
    const fresh = [...new Set(projectIds)].filter((id) => !this.known.has(id) && id.includes("/"));
    if (fresh.length === 0) return;
    const now = nowMicros();
    await this.store.insert("projects_ensure", "projects", fresh.map((id) => ({ ...splitProjectId(id), description: null, created_at: now, version: 0 })));
    for (const id of fresh) this.known.add(id);
  }

  /**
   * Every project of the given entities ("*" = all), for pickers and listings: those in
   * `projects`, and those that hold only objects, tables or files (as `find` sees them).
   */
  async list(entities: readonly string[]): Promise<ProjectRecord[]> {
    const pb = new ParamBuilder();
    const ofEntities = (column: string) => (entities.includes("*") ? "1" : `${column} IN ${pb.inStrings(entities)}`);
    const written = WRITTEN_TABLES.map((table) => `SELECT DISTINCT project_id FROM ${table}`).join(" UNION ALL ");
    const entityOf = "substring(project_id, 1, position(project_id, '/') - 1)";
    return this.store.rows<ProjectRecord>("projects_list", {
      sql: `SELECT entity, name, max(description) AS description FROM (
          SELECT entity, name, description FROM projects FINAL WHERE ${ofEntities("entity")}
          UNION ALL
          SELECT ${entityOf} AS entity, substring(project_id, position(project_id, '/') + 1) AS name, CAST(NULL AS Nullable(String)) AS description
          FROM (${written}) AS written WHERE position(project_id, '/') > 0 AND ${ofEntities(entityOf)}
        ) AS listed GROUP BY entity, name ORDER BY entity, name`,
      params: pb.params,
    });
  }
}
