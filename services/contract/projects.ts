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
