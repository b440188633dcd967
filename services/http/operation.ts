import type { Request, Response } from "express";
import type { z } from "zod";
import type { Principal } from "../auth/keys.js";

/**
 * One operation of the API: its route and its request/response schemas. The same object
 * drives validation, the handler's types and the OpenAPI document.
 */
export interface Operation<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  readonly id: string;
  readonly method: "get" | "post" | "put" | "delete";
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  readonly request?: Req;
  readonly response: Res;
  /** Answers JSON lines instead of one JSON document. */
  readonly streamed?: boolean;
  /** Takes a body other than JSON (documented by its handler). */
  readonly rawBody?: string;
  readonly public?: boolean;
}

export interface RequestContext {
  readonly principal: Principal;
  readonly req: Request;
  readonly res: Response;
  /** Bytes of the JSON body as received (0 for operations that read their body themselves). */
  readonly bodyBytes: number;
  /** Throws ForbiddenError unless the key may reach this project. */
  project(projectId: string): string;
}

export type Handler<Req extends z.ZodType, Res extends z.ZodType> = (
  input: z.output<Req>,
  ctx: RequestContext,
) => Promise<z.input<Res> | void>;

export function operation<Req extends z.ZodType, Res extends z.ZodType>(op: Operation<Req, Res>): Operation<Req, Res> {
  return op;
}
