import { OpenAPIRegistry, OpenApiGeneratorV3 } from "@asteasolutions/zod-to-openapi";
import type { Operation } from "./operation.js";
import { z } from "./zod.js";

const DetailError = z
  .object({ detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })) })
  .openapi("ValidationErrorResponse");

/** The OpenAPI document, generated from the same operations that the server mounts. */
export function openApiDocument(operations: readonly Operation[], version: string): object {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "basicAuth", { type: "http", scheme: "basic" });
  for (const op of operations) {
    if (op.alias) continue;
    const takesInput = op.body || op.query || op.params || op.multipart;
    registry.registerPath({
      method: op.method,
      path: op.path,
      operationId: op.id,
      summary: op.summary,
      ...(op.role === null ? {} : { description: `Needs the role \`${op.role}\` (docs/keys.md).` }),
      tags: [op.tag],
      ...(op.scope.kind === "public" ? {} : { security: [{ basicAuth: [] }] }),
      request: {
        ...(op.params instanceof z.ZodObject ? { params: op.params } : {}),
        ...(op.query instanceof z.ZodObject ? { query: op.query } : {}),
        ...(op.body && !op.rawBody ? { body: { content: { "application/json": { schema: op.body } } } } : {}),
        ...(op.multipart ? { body: { content: { "multipart/form-data": { schema: op.multipart } } } } : {}),
      },
      responses: {
        200: success(op),
        ...(takesInput ? { 422: { description: "Validation error", content: { "application/json": { schema: DetailError } } } } : {}),
        ...(op.role === null ? {} : { 403: { description: op.scope.kind === "key" ? `The key is \`${op.role}\` of no entity` : `The key may not reach a project the request names, or is below \`${op.role}\` there` } }),
      },
    });
  }
  return new OpenApiGeneratorV3(registry.definitions).generateDocument({
    openapi: "3.0.3",
    info: { title: "tracehouse tracing API", version },
  });
}

function success(op: Operation) {
  if (op.rawResponse) return { description: `Raw bytes (${op.rawResponse})`, content: { [op.rawResponse]: { schema: { type: "string" as const, format: "binary" } } } };
  return {
    description: op.streamed ? "One JSON object per line (application/jsonl)" : "Success",
    content: { [op.streamed ? "application/jsonl" : "application/json"]: { schema: op.response } },
  };
}
