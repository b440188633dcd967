import { buildSchema, graphql, GraphQLError, type GraphQLSchema } from "graphql";
import { canReach, defaultEntity, type Principal } from "../auth/keys.js";
import { graphqlOp } from "../contract/graphql.js";
import type { HttpApi } from "../http/app.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { ProjectsRepository, type ProjectRecord } from "../store/projects/projectsRepository.js";

/**
 * The schema the Weave SDKs' documents are validated and executed against, with graphql-js:
 * documents arrive re-printed and without `operationName`, so they are parsed, never
 * matched as text. A document asking for anything else gets GraphQL's own validation errors.
 */
const SCHEMA: GraphQLSchema = buildSchema(`
  type Query {
    viewer: User
    project(name: String!, entityName: String!): Project
  }
  type Mutation {
    upsertModel(input: UpsertModelInput!): UpsertModelPayload
  }
  type User {
    username: String!
    defaultEntity: Entity
  }
  type Entity {
    name: String!
  }
  type Project {
    name: String!
    entityName: String!
    description: String
  }
  input UpsertModelInput {
    id: String
    name: String
    entityName: String
    description: String
    repo: String
  }
  type UpsertModelPayload {
    model: Project
    inserted: Boolean
  }
`);

interface Context {
  readonly principal: Principal;
  readonly projects: ProjectsRepository;
}

function permissionError(entity: string): GraphQLError {
  return new GraphQLError(`this key may not reach entity ${entity}`, { extensions: { code: "PERMISSION_ERROR" } });
}

const projectView = (p: ProjectRecord) => ({ name: p.name, entityName: p.entity, description: p.description });

const ROOT = {
  viewer: (_args: unknown, ctx: Context) => ({ username: ctx.principal.username, defaultEntity: { name: defaultEntity(ctx.principal) } }),
  project: async (args: { name: string; entityName: string }, ctx: Context) => {
    if (!canReach(ctx.principal, args.entityName)) throw permissionError(args.entityName);
    const found = await ctx.projects.find(args.entityName, args.name);
    return found ? projectView(found) : null;
  },
  upsertModel: async (args: { input: { name?: string | null; entityName?: string | null; description?: string | null } }, ctx: Context) => {
    const entity = args.input.entityName ?? defaultEntity(ctx.principal);
    const name = args.input.name;
    if (!name || name.includes("/")) throw new GraphQLError("upsertModel needs a project name without '/'", { extensions: { code: "BAD_REQUEST" } });
    if (!canReach(ctx.principal, entity, "writer")) throw permissionError(entity);
    const existed = await ctx.projects.find(entity, name);
    const record = await ctx.projects.upsert(entity, name, args.input.description ?? null);
    return { model: projectView(record), inserted: existed === null };
  },
};

/** POST /graphql. */
export function mountGraphqlRoutes(api: HttpApi, deps: { store: ClickHouseStore }): void {
  const projects = new ProjectsRepository(deps.store);
  api.mount(graphqlOp, async ({ body }, ctx) => {
    const result = await graphql({
      schema: SCHEMA,
      source: body.query,
      rootValue: ROOT,
      contextValue: { principal: ctx.principal, projects } satisfies Context,
      variableValues: body.variables ?? undefined,
      operationName: body.operationName ?? undefined,
    });
    return JSON.parse(JSON.stringify(result)) as { data?: Record<string, unknown> | null; errors?: { message: string }[] };
  });
}
