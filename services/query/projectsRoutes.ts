import { ProjectsListRes } from "../contract/projects.js";
import { ANY_KEY, operation } from "../contract/operation.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { ProjectsRepository } from "../store/projects/projectsRepository.js";

export const projectsListOp = operation({
  id: "projects_list",
  method: "get",
  path: "/projects",
  summary: "List the projects the key reaches (for project pickers)",
  tag: "Service",
  response: ProjectsListRes,
  role: "viewer",
  scope: ANY_KEY,
});

export function mountProjectRoutes(api: HttpApi, deps: { store: ClickHouseStore }): void {
  const projects = new ProjectsRepository(deps.store);
  api.mount(projectsListOp, async (_input, ctx) => {
    const entities = [...ctx.principal.roles.keys()];
    if (entities.length === 0) return { projects: [] };
    const rows = await projects.list(entities);
    return { projects: rows.map((p) => ({ entity: p.entity, name: p.name, project_id: `${p.entity}/${p.name}`, description: p.description })) };
  });
}
