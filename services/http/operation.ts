import type { Request, Response } from "express";
import type { z } from "zod";
import type { Principal } from "../auth/keys.js";
import type { InputOf, ReachedProject } from "../contract/operation.js";

export interface RequestContext {
  readonly principal: Principal;
  readonly req: Request;
  readonly res: Response;
  /** Bytes of the JSON body as received (0 for operations that read their body themselves). */
  readonly bodyBytes: number;
  /** The JSON body's text as received (UTF-8), only for operations with `keepBodyText`. */
  readonly bodyText?: string;
  /** The projects the operation's scope named, already checked against the key. */
  readonly projects: readonly string[];
  /**
   * Checks that the key reaches a project named inside a streamed body (scope
   * `streamedProject`): ForbiddenError (403) otherwise. Call it before storing anything.
   */
  reachProject(projectId: string): ReachedProject;
  /** Whether the key reaches the project with the role the operation declares (`key` scopes filter what they answer with it). */
  mayReach(projectId: string): boolean;
  /** `X-Weave-Retry-Id`, for operations that declare `retries` (null otherwise or when absent). */
  readonly retryId: string | null;
}

export type Handler<B, Q, P, R extends z.ZodType> = (input: InputOf<B, Q, P>, ctx: RequestContext) => Promise<z.input<R> | void>;
