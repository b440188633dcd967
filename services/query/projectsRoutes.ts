import { projectSettingsReadOp, projectSettingsUpdateOp, projectsListOp, type ProjectsListRes, type ProjectSettingsRes } from "../contract/projects.js";
import type { HttpApi } from "../http/app.js";
import type { Principal } from "../auth/keys.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { ProjectsRepository } from "../store/projects/projectsRepository.js";
import type { ProjectRetention } from "../store/projects/retention.js";
import { ProjectSettingsRepository } from "../store/projects/settingsRepository.js";
import { projectStorageBytes } from "../store/projects/storage.js";

/** The projects of every entity the key holds a role in (`/projects`, and the MCP tool list_projects). */
export async function reachableProjects(projects: ProjectsRepository, principal: Principal): Promise<ProjectsListRes> {
  const entities = [...principal.roles.keys()];
  if (entities.length === 0) return { projects: [] };
  const rows = await projects.list(entities);
  return { projects: rows.map((p) => ({ entity: p.entity, name: p.name, project_id: `${p.entity}/${p.name}`, description: p.description })) };
}

export interface ProjectRoutesDeps {
  readonly store: ClickHouseStore;
  readonly retention: ProjectRetention;
  /** After a settings change: the retention job runs soon (when it runs in this process). */
  readonly retentionChanged: () => void;
}

export function mountProjectRoutes(api: HttpApi, deps: ProjectRoutesDeps): void {
  const projects = new ProjectsRepository(deps.store);
  const settings = new ProjectSettingsRepository(deps.store);
  api.mount(projectsListOp, async (_input, ctx) => reachableProjects(projects, ctx.principal));

  const answer = async (projectId: string): Promise<ProjectSettingsRes> => {
    const [own, storage] = await Promise.all([settings.find(projectId), projectStorageBytes(deps.store, projectId)]);
    return {
      retention_days: own.retention_days,
      effective_retention_days: own.retention_days ?? deps.retention.defaultDays,
      storage_bytes: storage,
    };
  };
  api.mount(projectSettingsReadOp, async ({ params }) => answer(`${params.entity}/${params.project}`));
  api.mount(projectSettingsUpdateOp, async ({ params, body }) => {
    const projectId = `${params.entity}/${params.project}`;
    await settings.replace(projectId, { retention_days: body.retention_days });
    deps.retention.refresh();
    deps.retentionChanged();
    return answer(projectId);
  });
}
