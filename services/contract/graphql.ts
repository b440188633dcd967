import { ANY_KEY, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * `POST /graphql`: the subset of the W&B GraphQL API that the Weave Python SDK sends at
 * `weave.init` (viewer and default entity, project lookup, project creation). Every
 * answer is a GraphQL response (`data` and/or `errors`, HTTP 200), never an HTML page.
 */
export const GraphqlReq = z
  .object({
    query: z.string().min(1).max(100_000),
    variables: z.record(z.string(), z.unknown()).nullish(),
    operationName: z.string().nullish(),
  })
  .openapi("GraphqlReq");

export const GraphqlRes = z
  .object({
    data: z.record(z.string(), z.unknown()).nullish(),
    errors: z.array(z.object({ message: z.string(), extensions: z.record(z.string(), z.unknown()).optional() }).passthrough()).optional(),
  })
  .openapi("GraphqlRes");

/** Entities are checked per field by the resolvers (a key may reach some entities only). */
export const graphqlOp = operation({
  id: "graphql",
  method: "post",
  path: "/graphql",
  summary: "W&B GraphQL subset used by the Weave SDKs: viewer, project, upsertModel",
  tag: "GraphQL",
  body: GraphqlReq,
  response: GraphqlRes,
  role: "viewer",
  scope: ANY_KEY,
});
