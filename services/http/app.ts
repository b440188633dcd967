import { checkJsonSyntax } from "../jsonSyntax.js";
import { checkJsonBytes, DEFAULT_JSON_MAX_DEPTH } from "../jsonBounds.js";
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { createServer, IncomingMessage, ServerResponse, type Server } from "node:http";
import type { Logger } from "pino";
import { canReach, holdsAnywhere, roleIn, type KeyRing, type Principal } from "../auth/keys.js";
import { credentials } from "../auth/basic.js";
import { ClientError, ForbiddenError, QueueFullError, RetryableError, StoreUnavailableError, UnauthorizedError, ValidationError } from "../errors.js";
import type { InputOf, Operation, OperationRole, ReachedProject } from "../contract/operation.js";
import type { Role } from "../keyRoles.js";
import { closeAfterAnswer } from "./lingeringClose.js";
import type { Handler, RequestContext } from "./operation.js";
import { ignoredFields, toValidationError } from "./validation.js";
import { RETRY_ID_HEADER, RetryAnswers, retryKey, type RecordedAnswers } from "./retries.js";
import type { z } from "zod";
import { nameRoute, requestLog, requestLogger } from "./requestLog.js";
import { plainBodyLength, readPlainBody } from "./plainBody.js";

export interface HttpOptions {
  readonly keys: KeyRing;
  readonly log: Logger;
  readonly maxBodyBytes: number;
  /** Deepest nesting of containers a JSON body may have (400 beyond); DEFAULT_JSON_MAX_DEPTH when absent. */
  readonly maxJsonDepth?: number;
  /** Where `recorded` operations keep their answers (http/retries.ts); without it they cannot be mounted. */
  readonly recordedAnswers?: RecordedAnswers;
  /**
   * Resolves once the writes queued for these projects before the call are stored; run before
   * every operation on projects that is not itself `queued` (read-your-writes). Absent where
   * this process cannot know (Kafka).
   */
  readonly queuedWritesStored?: (projects: readonly string[]) => Promise<void>;
}

const ANONYMOUS: Principal = { username: "anonymous", roles: new Map() };
/** Dropped before parsing, as body-parser's UTF-8 decoding drops it. */
const LEADING_BOM = /^\uFEFF/;

/**
 * Writes an operation's own error body (e.g. OTLP's `google.rpc.Status`) for an answer
 * whose status and headers `errorAnswer` already chose.
 */
export type ErrorRenderer = (answer: ErrorAnswer, err: unknown, req: Request, res: Response) => void;

export interface MountOptions {
  /** Errors of this operation (auth included) are answered with this body instead of `detail`. */
  readonly renderError?: ErrorRenderer;
  /**
   * Reads the JSON body as text only (`ctx.bodyText`), checked for syntax without being built:
   * validation sees what this answers for the text (the body with its bulk replaced, e.g. a
   * table's rows by empty objects), and the handler reads the bulk from the text.
   */
  readonly bodyFromText?: (text: string) => unknown;
}

/** The API's HTTP server: authentication, body parsing and validation around each operation. */
export class HttpApi {
  readonly app: Express;
  readonly operations: Operation[] = [];

  private draining = false;
  private readonly stopHooks: (() => void)[] = [];
  /** Size of each parsed JSON body, for the ingest memory bound. */
  private readonly bodySizes = new WeakMap<object, number>();
  /** Text of each JSON body an operation asked to keep (`keepBodyText`). */
  private readonly bodyTexts = new WeakMap<object, string>();
  private readonly retries: RetryAnswers;
  private readonly logRequest: RequestHandler;
  /** The handlers of each operation on a path without parameters, by `METHOD /path` (see `listener`). */
  private readonly exactRoutes = new Map<string, readonly RequestHandler[]>();
  /** Principals of the Authorization headers that authenticated, so that a key is hashed once, not per request. */

  constructor(private readonly options: HttpOptions) {
    this.retries = new RetryAnswers(options.recordedAnswers ?? null, (err) => options.log.warn({ err }, "could not record the answer of a retried request"));
    this.app = express();
    this.app.disable("x-powered-by");
    this.app.set("trust proxy", false);
    this.logRequest = requestLog(options.log);
    this.app.use(this.logRequest);
  }

  /**
   * The server's request listener. A request for an operation whose path has no parameters
   * runs that operation's handlers directly, as Express would after its router (the same
   * request and answer objects, the same request log, parsers, handler and error answers),
   * without walking the router's list of every route; any other request goes to Express.
   */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? "";
    const query = url.indexOf("?");
    const handlers = this.exactRoutes.get(`${req.method ?? ""} ${query < 0 ? url : url.slice(0, query)}`);
    if (!handlers) {
      this.app(req, res);
      return;
    }
    // Made by `listen`'s server, they already are Express's; a prototype set afterwards costs more.
    const request = (Object.prototype.isPrototypeOf.call(this.app.request, req) ? req : Object.setPrototypeOf(req, this.app.request)) as Request;
    const response = (Object.prototype.isPrototypeOf.call(this.app.response, res) ? res : Object.setPrototypeOf(res, this.app.response)) as Response;
    request.res = response;
    response.req = request;
    response.locals = Object.create(null) as Record<string, unknown>;
    request.baseUrl = "";
    request.originalUrl = url;
    request.params = {};
    this.runHandlers([this.logRequest, ...handlers], request, response);
  };

  /** Listens on `port` with `listener`. */
  listen(port: number, host: string): Promise<Server> {
    class ApiRequest extends IncomingMessage {}
    class ApiResponse<R extends IncomingMessage> extends ServerResponse<R> {}
    Object.setPrototypeOf(ApiRequest.prototype, this.app.request);
    Object.setPrototypeOf(ApiResponse.prototype, this.app.response);
    const server = createServer({ IncomingMessage: ApiRequest, ServerResponse: ApiResponse }, this.listener);
    return new Promise<Server>((done, fail) => {
      server.once("error", fail);
      server.listen(port, host, () => done(server));
    });
  }

  /** Runs handlers in turn as Express's router does: each calls `next` to pass on, `next(err)` to answer an error. */
  private runHandlers(handlers: readonly RequestHandler[], req: Request, res: Response): void {
    let at = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined && err !== null && err !== "route" && err !== "router") {
        this.answerError(err, req, res, (answer) => res.json(answer.body));
        return;
      }
      const handler = handlers[at++];
      if (!handler) {
        this.answerNoRoute(req, res);
        return;
      }
      try {
        const ran: unknown = handler(req, res, next);
        if (ran instanceof Promise) ran.catch(next);
      } catch (thrown) {
        next(thrown);
      }
    };
    next();
  }

  /** Something a mounted resource must release when the service stops (timers, loaded models). */
  onStop(hook: () => void): void {
    this.stopHooks.push(hook);
  }

  /** Runs the stop hooks, once the server answers no more requests. */
  runStopHooks(): void {
    for (const hook of this.stopHooks.splice(0)) hook();
  }

  /** Stop intake: from now on every new request is answered 503 with Connection: close. */
  beginDrain(): void {
    this.draining = true;
  }

  /**
   * While stopping, requests that arrive on kept-alive connections are turned away (nothing
   * accepted, answered in the operation's own error shape) and their connections closed.
   */
  private refuseWhileDraining(res: Response): void {
    if (!this.draining) return;
    closeAfterAnswer(res);
    throw new RetryableError("shutting down, retry later", 1);
  }

  authenticate(req: Request): Principal {
    const secret = credentials(req.headers.authorization)?.secret;
    const principal = secret === undefined ? null : this.options.keys.find(secret);
    if (!principal) throw new UnauthorizedError("missing or invalid API key");
    return principal;
  }

  /**
   * Read-your-writes for a route that is not an operation but reads projects it learns from
   * the request (`/mcp`): resolves once the writes queued for them are stored, as `mount`
   * waits before an operation's handler.
   */
  queuedWritesStored(projects: readonly string[]): Promise<void> {
    return this.options.queuedWritesStored?.(projects) ?? Promise.resolve();
  }

  /**
   * Mounts one operation: auth, body parse, validation of the path parameters, query and
   * body, the scope check (every project the input names must be reachable by the key),
   * then the handler; its result is answered as JSON.
   */
  mount<B extends z.ZodType | undefined, Q extends z.ZodType | undefined, P extends z.ZodType | undefined, R extends z.ZodType>(
    op: Operation<B, Q, P, R>,
    handler: Handler<B, Q, P, R>,
    options: MountOptions = {},
  ): void {
    if (!op.scope) throw new Error(`operation ${op.id} declares no scope: name the projects it touches, or mark it public`);
    const role = declaredRole(op);
    if (op.retries === "recorded" && !this.retries.records) throw new Error(`operation ${op.id} records retried answers: the API needs recordedAnswers`);
    this.operations.push(op as unknown as Operation);
    const parsers = !op.body || op.rawBody ? [] : options.bodyFromText ? this.textBody(options.bodyFromText) : [this.jsonBody(op.keepBodyText === true)];
    const run = async (req: Request, res: Response, next: NextFunction) => {
      nameRoute(res, op.path);
      try {
        this.refuseWhileDraining(res);
        const principal = role === null ? ANONYMOUS : this.authenticate(req);
        // Before validation: a key below the role everywhere learns nothing of the input's rules.
        if (role !== null && !holdsAnywhere(principal, role)) throw new ForbiddenError(`this operation needs the role ${role}; this key holds it in no entity`);
        const input = {
          params: op.params ? this.validate(op.params, req.params, "path", res) : undefined,
          query: op.query ? this.validate(op.query, req.query, "query", res) : undefined,
          body: op.fastBody?.(req.body) ?? this.validate(op.body, req.body, "body", res),
        } as InputOf<B, Q, P>;
        const projects = op.scope.kind === "projects" ? op.scope.of(input, req.headers) : [];
        for (const projectId of projects) checkReach(principal, projectId, role);
        if (!op.queued && projects.length > 0) await this.queuedWritesStored(projects);
        const retryId = op.retries ? retryIdOf(req) : null;
        const ctx: RequestContext = {
          principal,
          req,
          res,
          bodyBytes: this.bodySizes.get(req) ?? 0,
          bodyText: this.bodyTexts.get(req),
          projects,
          reachProject: (projectId) => checkReach(principal, projectId, role),
          mayReach: (projectId) => canReach(principal, projectId, role ?? undefined),
          retryId,
        };
        if (retryId === null) {
          const result = await handler(input, ctx);
          if (!res.headersSent && result !== undefined) answerJson(res, result);
          return;
        }
        const answer = await this.retries.answer(retryKey(retryId, op.id, projects), op.retries === "recorded", async () => {
          const result = await handler(input, ctx);
          return res.headersSent || result === undefined ? undefined : JSON.stringify(result);
        });
        if (res.headersSent) return;
        if (answer === undefined) throw new Error(`operation ${op.id} declares retries but answered nothing to keep`);
        res.status(200).type("application/json").send(answer);
      } catch (err) {
        if (options.renderError) this.answerError(err, req, res, options.renderError);
        else next(err);
      }
    };
    this.app[op.method](expressPath(op.path), ...parsers, run);
    const key = `${op.method.toUpperCase()} ${op.path}`;
    // The first mounted wins, as in Express's router.
    if (!op.path.includes("{") && !this.exactRoutes.has(key)) this.exactRoutes.set(key, [...parsers, run]);
  }

  private get maxJsonDepth(): number {
    return this.options.maxJsonDepth ?? DEFAULT_JSON_MAX_DEPTH;
  }

  /**
   * The JSON body: checked (UTF-8, depth), its size and, if asked, its text kept, then parsed.
   * A plain body (plainBody.ts) is read here; any other through body-parser, which inflates,
   * decodes or refuses it; both check and answer alike.
   */
  private jsonBody(keepText: boolean): RequestHandler {
    const verify = (req: IncomingMessage, bytes: Buffer) => {
      checkJsonBytes(bytes, this.maxJsonDepth);
      this.bodySizes.set(req, bytes.length);
      if (keepText) this.bodyTexts.set(req, bytes.toString("utf8"));
    };
    const parser = express.json({ limit: this.options.maxBodyBytes, type: () => true, strict: false, verify: (req, _res, buf) => verify(req, buf) });
    return (req, res, next) => {
      const length = plainBodyLength(req, this.options.maxBodyBytes);
      if (length === null) return parser(req, res, next);
      readPlainBody(req, length, (err, bytes) => {
        if (err) return next(err);
        try {
          verify(req, bytes);
        } catch (refused) {
          return next(refused);
        }
        try {
          req.body = JSON.parse(bytes.toString("utf8").replace(LEADING_BOM, "")) as unknown;
        } catch (malformed) {
          return next(Object.assign(new Error(malformed instanceof Error ? malformed.message : String(malformed)), { status: 400, type: "entity.parse.failed" }));
        }
        next();
      });
    };
  }

  /** The body as text (decoded once), checked as JSON and turned into what validation sees; the text is kept. */
  private textBody(bodyFromText: (text: string) => unknown) {
    const read = express.text({
      limit: this.options.maxBodyBytes,
      type: () => true,
      verify: (req, _res, buf) => {
        checkJsonBytes(buf, this.maxJsonDepth);
        this.bodySizes.set(req, buf.length);
      },
    });
    const convert = (req: Request, _res: Response, next: NextFunction) => {
      const text: unknown = req.body;
      if (typeof text !== "string" || text === "") {
        req.body = undefined;
        return next();
      }
      try {
        checkJsonSyntax(text);
        this.bodyTexts.set(req, text);
        req.body = bodyFromText(text);
        next();
      } catch (err) {
        next(err);
      }
    };
    return [read, convert];
  }

  /** One part of the request against its schema; `undefined` for a part the operation does not take. */
  private validate(schema: z.ZodType | undefined, source: unknown, where: "path" | "query" | "body", res: Response): unknown {
    if (!schema) return undefined;
    if (source === undefined) throw ValidationError.at([where], "a JSON body is required", "missing");
    const parsed = schema.safeParse(source);
    if (!parsed.success) throw toValidationError(parsed.error, where);
    if (where === "body") {
      const ignored = ignoredFields(source, parsed.data);
      if (ignored.length > 0) {
        res.setHeader("X-Ignored-Fields", ignored.join(", ").slice(0, 2000));
        requestLogger(res, this.options.log).info({ path: res.req.path, ignored }, "ignored unknown request fields");
      }
    }
    return parsed.data;
  }

  /** Must be installed after every route: answers unknown routes, maps typed errors to answers. */
  installErrorHandler(): void {
    this.app.use((req: Request, res: Response) => this.answerNoRoute(req, res));
    this.app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
      this.answerError(err, req, res, (answer) => res.json(answer.body));
    });
  }

  private answerNoRoute(req: Request, res: Response): void {
    const message = `no route ${req.method} ${req.path.slice(0, 200)}`;
    res.status(404).setHeader("x-should-retry", "false");
    res.json({ detail: message, message });
  }

  private answerError(err: unknown, req: Request, res: Response, render: ErrorRenderer): void {
    const answer = errorAnswer(err);
    const log = requestLogger(res, this.options.log);
    // An expected refusal (draining, ClickHouse away, buffer full) is a warning; a fault is an error.
    if (err instanceof RetryableError) log.warn({ path: req.path, reason: err.message }, "request refused, client may retry");
    else if (answer.status >= 500) log.error({ err, path: req.path }, "request failed");
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [k, v] of Object.entries(answer.headers ?? {})) res.setHeader(k, v);
    res.status(answer.status);
    render(answer, err, req, res);
  }
}

/**
 * A 200 answer of JSON. A GET answer goes through Express (its ETag lets a client revalidate);
 * the answer to any other method is written as it is, as no client caches those.
 */
function answerJson(res: Response, result: unknown): void {
  if (res.req.method === "GET") {
    res.status(200).json(result);
    return;
  }
  const text = JSON.stringify(result);
  res.statusCode = 200;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/** The request's `X-Weave-Retry-Id`, null when absent or empty. */
function retryIdOf(req: Request): string | null {
  const header = req.headers[RETRY_ID_HEADER];
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  return value ? value : null;
}

/** The role an operation needs: declared by every one, null exactly for `public` scopes. */
function declaredRole(op: Operation): OperationRole {
  const role: OperationRole | undefined = op.role;
  if (role === undefined) throw new Error(`operation ${op.id} declares no role: say whether viewers, writers or admins may call it`);
  if ((role === null) !== (op.scope.kind === "public")) throw new Error(`operation ${op.id}: only public operations (and all of them) declare role null`);
  return role;
}

export function checkReach(principal: Principal, projectId: string, needed: Role | null): ReachedProject {
  if (!canReach(principal, projectId)) throw new ForbiddenError(`this key may not reach project ${projectId}`);
  if (needed !== null && !canReach(principal, projectId, needed)) throw new ForbiddenError(`this operation needs the role ${needed} in project ${projectId}; this key is ${roleIn(principal, projectId)} there`);
  return projectId as ReachedProject;
}

/** `/objs/{object_id}/tags` (OpenAPI) → `/objs/:object_id/tags` (Express). */
export function expressPath(path: string): string {
  return path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ":$1");
}

export interface ErrorAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface BodyParserError {
  type?: string;
  status?: number;
  message?: string;
}

/**
 * The answer to a failed request: its status, headers and body. Every body has `detail`
 * (the validation `detail` list for 422, else a sentence) and `message` (a sentence), which
 * is what the Weave SDKs show; permanent refusals say `x-should-retry: false` so that
 * clients with their own retry rules (the Stainless binding retries 408, 409, 429, 5xx)
 * never retry them.
 */
export function errorAnswer(err: unknown): ErrorAnswer {
  const refused = (status: number, message: string, detail: unknown = message, headers: Record<string, string> = {}): ErrorAnswer => ({
    status,
    body: { detail, message },
    headers: { ...(status < 500 && status !== 429 ? { "x-should-retry": "false" } : {}), ...headers },
  });
  const retryAfter = (seconds: number) => ({ "Retry-After": String(seconds) });
  if (err instanceof ValidationError) return refused(422, err.message, err.detail);
  if (err instanceof ClientError) return refused(err.status, err.message);
  if (err instanceof UnauthorizedError) return refused(401, err.message, err.message, { "WWW-Authenticate": 'Basic realm="tracehouse"' });
  if (err instanceof ForbiddenError) return refused(403, err.message);
  if (err instanceof QueueFullError) return refused(429, err.message, err.message, retryAfter(err.retryAfterSeconds));
  if (err instanceof StoreUnavailableError) return refused(503, "storage unavailable, retry later", undefined, retryAfter(err.retryAfterSeconds));
  if (err instanceof RetryableError) return refused(503, err.message, err.message, retryAfter(err.retryAfterSeconds));
  const parserError = err as BodyParserError;
  if (parserError?.type === "entity.too.large") return refused(413, "request body too large");
  if (parserError?.type === "entity.parse.failed") {
    const message = `malformed JSON: ${parserError.message ?? ""}`;
    return refused(400, message, [{ loc: ["body"], msg: message, type: "json_invalid" }]);
  }
  if (parserError?.type === "encoding.unsupported" || parserError?.type === "charset.unsupported") return refused(415, parserError.message ?? "unsupported encoding");
  // Other refusals of the request by Express or its parsers, which carry a 4xx status (e.g. a
  // path parameter with a broken %-escape: URIError, 400; a request aborted mid-body).
  const status = parserError?.status;
  if (typeof status === "number" && status >= 400 && status < 500) return refused(status, parserError.message ?? "bad request");
  return refused(500, "internal error");
}
