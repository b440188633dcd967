import { OpenAPIRegistry, OpenApiGeneratorV3 } from "@asteasolutions/zod-to-openapi";
import type { Operation } from "../http/operation.js";
import { z } from "./zod.js";

const DetailError = z
  .object({ detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })) })
  .openapi("ValidationErrorResponse");

/** The OpenAPI document, generated from the same operations that the server mounts. */
export function openApiDocument(operations: readonly Operation[], version: string): object {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "basicAuth", { type: "http", scheme: "basic" });
  for (const op of operations) {
    const path = op.path.replace(/:([A-Za-z_]+)/g, "{$1}");
    const hasBody = op.request && (op.method === "post" || op.method === "put") && !op.rawBody;
    registry.registerPath({
      method: op.method,
      path,
      operationId: op.id,
      summary: op.summary,
      tags: [op.tag],
      ...(op.public ? {} : { security: [{ basicAuth: [] }] }),
      request: hasBody ? { body: { content: { "application/json": { schema: op.request! } } } } : {},
      responses: {
        200: {
          description: op.streamed ? "One JSON object per line (application/jsonl)" : "Success",
          content: { [op.streamed ? "application/jsonl" : "application/json"]: { schema: op.response } },
        },
        ...(op.request ? { 422: { description: "Validation error", content: { "application/json": { schema: DetailError } } } } : {}),
      },
    });
  }
  return new OpenApiGeneratorV3(registry.definitions).generateDocument({
    openapi: "3.0.3",
    info: { title: "tracehouse tracing API", version },
  });
}
