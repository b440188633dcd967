import { V2ProjectParams } from "./common.js";
import { ANY_KEY, operation, PATH_PROJECT } from "./operation.js";
import { z } from "./zod.js";

export const ProjectSummary = z
  .object({
    entity: z.string(),
    name: z.string(),
    project_id: z.string().openapi({ description: "`entity/name`, as the other operations take it" }),
    description: z.string().nullable(),
  })
  .openapi("ProjectSummary");

export const ProjectsListRes = z
  .object({
    projects: z.array(ProjectSummary).openapi({
      description:
        "The projects of the entities the key reaches, by entity then name: those created by GraphQL UpsertModel and those that received calls " +
        "(a project that holds only objects, tables or files is not listed)",
    }),
  })
  .openapi("ProjectsListRes");
export type ProjectsListRes = z.infer<typeof ProjectsListRes>;

const RetentionDays = z.number().int().min(1).nullable().openapi({
  description: "Days the project's calls are kept, by `started_at`; null = the server's default (`RETENTION_DAYS`)",
  example: 30,
});

export const ProjectSettingsReq = z.object({ retention_days: RetentionDays }).openapi("ProjectSettingsReq");
export type ProjectSettingsReq = z.infer<typeof ProjectSettingsReq>;

export const ProjectSettingsRes = z
  .object({
    retention_days: RetentionDays,
    effective_retention_days: z.number().int().nullable().openapi({
      description: "The retention that applies: the project's own, else the server's default; null = everything is kept",
    }),
    storage_bytes: z.number().int().openapi({
      description:
        "Disk used by the project's data, estimated: per table, its bytes on disk times the project's share of its rows (docs/operations.md, \"Retention and disk\")",
    }),
  })
  .openapi("ProjectSettingsRes");
export type ProjectSettingsRes = z.infer<typeof ProjectSettingsRes>;

const SETTINGS_PATH = "/projects/{entity}/{project}/settings";

export const projectSettingsReadOp = operation({
  id: "project_settings_read",
  method: "get",
  path: SETTINGS_PATH,
  summary: "A project's settings (retention) and the disk its data uses",
  tag: "Service",
  params: V2ProjectParams,
  scope: PATH_PROJECT,
  role: "viewer",
  response: ProjectSettingsRes,
});

export const projectSettingsUpdateOp = operation({
  id: "project_settings_update",
  method: "put",
  path: SETTINGS_PATH,
  summary: "Set a project's settings: calls older than its retention leave every read within a minute and are deleted",
  tag: "Service",
  params: V2ProjectParams,
  body: ProjectSettingsReq,
  scope: PATH_PROJECT,
  role: "admin",
  response: ProjectSettingsRes,
});

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
