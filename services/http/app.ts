import { checkJsonSyntax } from "../jsonSyntax.js";
import { checkJsonBytes, DEFAULT_JSON_MAX_DEPTH, type BodyArray } from "../jsonBounds.js";
import { parseJsonBody } from "../jsonPieces.js";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { createServer, IncomingMessage, ServerResponse, type Server } from "node:http";
import type { Logger } from "pino";
import { canReach, holdsAnywhere, roleIn, type KeyRing, type Principal } from "../auth/keys.js";
import { credentials } from "../contract/credentials.js";
import { ClientError, ForbiddenError, QueueFullError, RetryableError, StoreUnavailableError, UnauthorizedError, ValidationError } from "../errors.js";
import type { HttpMethod, InputOf, Operation, OperationRole, ReachedProject } from "../contract/operation.js";
import type { Role } from "../keyRoles.js";
import { closeAfterAnswer } from "./lingeringClose.js";
import type { Handler, RequestContext } from "./operation.js";
import { ignoredFields, toValidationError } from "./validation.js";
import { RETRY_ID_HEADER, RetryAnswers, retryKey, type RecordedAnswers } from "./retries.js";
import type { z } from "zod";
import { nameRoute, requestLog, requestLogger } from "./requestLog.js";
import { plainBodyLength, readPlainBody } from "./plainBody.js";
import { Router, type Match } from "./router.js";

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

/**
 * A route outside the contract (documents, metrics, /mcp, the UI's files): it answers through
 * `res`. A thrown error or a rejected promise is answered as an operation's error; `fail`
 * takes the errors of callback-style code.
 */
export type RouteHandler = (req: Request, res: Response, fail: (err: unknown) => void) => unknown;

/** Reads or checks the body before the handler: calls `next` to pass on, `next(err)` to refuse. */
type BodyStep = (req: Request, res: Response, next: (err?: unknown) => void) => void;

/** What the dispatcher runs for a matched request. */
interface Route {
  /** The route in logs and metrics: the declared path template, never the raw URL. */
  readonly name: string;
  readonly body: readonly BodyStep[];
  readonly handle: RouteHandler;
  /** How the handler's errors are written; a refused body is always answered with `detail`. */
  readonly renderError: ErrorRenderer;
}

/** The default error body: `{detail, message}` (errorAnswer). */
const renderDetail: ErrorRenderer = (answer, _err, _req, res) => void res.json(answer.body);

/**
 * The API's HTTP server. Every request takes one path (`listener`): request log, route
 * (router.ts), body, then the route's handler (for an operation: drain check, auth,
 * validation, scope, handler), and every error is answered by `answerError`.
 */
export class HttpApi {
  readonly operations: Operation[] = [];

  /**
   * Express's request and response helpers (`res.json` and its ETag, `req.query`,
   * `res.sendFile`) read their settings from an app; no Express router runs.
   */
  private readonly helpers: Express;
  private readonly router = new Router<Route>();
  private draining = false;
  private readonly stopHooks: (() => void)[] = [];
  /** Size of each parsed JSON body, for the ingest memory bound. */
  private readonly bodySizes = new WeakMap<object, number>();
  /** Text of each JSON body an operation asked to keep (`keepBodyText`). */
  private readonly bodyTexts = new WeakMap<object, string>();
  private readonly retries: RetryAnswers;
  private readonly logRequest: (req: Request, res: Response) => void;

  constructor(private readonly options: HttpOptions) {
    this.retries = new RetryAnswers(options.recordedAnswers ?? null, (err) => options.log.warn({ err }, "could not record the answer of a retried request"));
    this.helpers = express();
    this.helpers.disable("x-powered-by");
    this.helpers.set("trust proxy", false);
    this.logRequest = requestLog(options.log);
  }

  /** The server's request listener: the one dispatcher of every request. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const request = this.asRequest(req, res);
    const response = request.res!;
    this.logRequest(request, response);
    let match: Match<Route> | null;
    try {
      match = this.router.find(request.method, request.path);
    } catch (refused) {
      this.answerError(refused, request, response, renderDetail);
      return;
    }
    if (!match) {
      this.answerNoRoute(request, response);
      return;
    }
    request.params = match.params;
    nameRoute(response, match.route.name);
    this.readBody(match.route, 0, request, response);
  };

  /** Listens on `port` with `listener`. */
  listen(port: number, host: string): Promise<Server> {
    class ApiRequest extends IncomingMessage {}
    class ApiResponse<R extends IncomingMessage> extends ServerResponse<R> {}
    Object.setPrototypeOf(ApiRequest.prototype, this.helpers.request);
    Object.setPrototypeOf(ApiResponse.prototype, this.helpers.response);
    const server = createServer({ IncomingMessage: ApiRequest, ServerResponse: ApiResponse }, this.listener);
    return new Promise<Server>((done, fail) => {
      server.once("error", fail);
      server.listen(port, host, () => done(server));
    });
  }

  /**
   * A route outside the contract, `path` a template as an operation's (`/ui/{*rest}` for the
   * rest of a path). No body is read and nothing validated: the handler does what it needs.
   */
  route(method: HttpMethod, path: string, handle: RouteHandler): void {
    this.router.add(method, path, { name: path, body: [], handle, renderError: renderDetail });
  }

  /** The request and answer with Express's helpers, linked as Express links them. */
  private asRequest(req: IncomingMessage, res: ServerResponse): Request {
    // Made by `listen`'s server, they already are Express's; a prototype set afterwards costs more.
    const request = (Object.prototype.isPrototypeOf.call(this.helpers.request, req) ? req : Object.setPrototypeOf(req, this.helpers.request)) as Request;
    const response = (Object.prototype.isPrototypeOf.call(this.helpers.response, res) ? res : Object.setPrototypeOf(res, this.helpers.response)) as Response;
    request.res = response;
    response.req = request;
    response.locals = Object.create(null) as Record<string, unknown>;
    request.baseUrl = "";
    request.originalUrl = request.url;
    request.params = {};
    return request;
  }

  /** Runs the route's body steps in turn, then its handler. */
  private readBody(route: Route, at: number, req: Request, res: Response): void {
    const step = route.body[at];
    if (!step) {
      const fail = (err: unknown) => this.answerError(err, req, res, route.renderError);
      // Express's helpers (res.sendFile) hand their errors to `req.next`; passing on without one finds no further route.
      req.next = (err?: unknown) => (err === undefined || err === null ? this.answerNoRoute(req, res) : fail(err));
      runHandler(route.handle, req, res, fail);
      return;
    }
    const next = (err?: unknown) => (err === undefined || err === null ? this.readBody(route, at + 1, req, res) : this.answerError(err, req, res, renderDetail));
    try {
      step(req, res, next);
    } catch (refused) {
      next(refused);
    }
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
    const run = async (req: Request, res: Response): Promise<void> => {
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
      // A queued write's answer waits for its log to sync, and an async function keeps every
      // local alive across its waits: the body's parsed objects would outlive V8's young
      // generation (docs/benchmarks.md, "A queued write's body let go while its log syncs"). So
      // the request lets go of a queued write's body, `run` returns rather than awaits, and the
      // handler is handed the input once. Other operations keep `req.body` (chat completions
      // read it as sent).
      if (op.queued) req.body = undefined;
      const call = handOver(input, (taken) => handler(taken, ctx));
      return retryId === null ? answerResult(call(), res) : this.answerRetried(op, retryId, ctx, call);
    };
    this.router.add(op.method, op.path, { name: op.path, body: parsers, handle: run, renderError: options.renderError ?? renderDetail });
  }

  /** An operation that declares `retries`: a retry of an answered request gets the answer kept (http/retries.ts). */
  private async answerRetried(op: Operation, retryId: string, ctx: RequestContext, handle: () => Promise<unknown>): Promise<void> {
    const { res } = ctx;
    const answer = await this.retries.answer(retryKey(retryId, op.id, ctx.projects), op.retries === "recorded", async () => {
      const result = await handle();
      return res.headersSent || result === undefined ? undefined : JSON.stringify(result);
    });
    if (res.headersSent) return;
    if (answer === undefined) throw new Error(`operation ${op.id} declares retries but answered nothing to keep`);
    res.status(200).type("application/json").send(answer);
  }

  private get maxJsonDepth(): number {
    return this.options.maxJsonDepth ?? DEFAULT_JSON_MAX_DEPTH;
  }

  /**
   * The JSON body: checked (UTF-8, depth), its size and, if asked, its text kept, then parsed.
   * A plain body (plainBody.ts) is read here; any other through body-parser, which inflates,
   * decodes or refuses it; both check and answer alike.
   */
  private jsonBody(keepText: boolean): BodyStep {
    const verify = (req: IncomingMessage, bytes: Buffer): BodyArray | null => {
      const array = checkJsonBytes(bytes, this.maxJsonDepth);
      this.bodySizes.set(req, bytes.length);
      if (keepText) this.bodyTexts.set(req, bytes.toString("utf8"));
      return array;
    };
    const parser = express.json({ limit: this.options.maxBodyBytes, type: () => true, strict: false, verify: (req, _res, buf) => verify(req, buf) });
    return (req, res, next) => {
      const length = plainBodyLength(req, this.options.maxBodyBytes);
      if (length === null) return parser(req, res, next);
      readPlainBody(req, length, (err, bytes) => {
        if (err) return next(err);
        let array: BodyArray | null;
        try {
          array = verify(req, bytes);
        } catch (refused) {
          return next(refused);
        }
        try {
          req.body = parseJsonBody(bytes, array);
        } catch (malformed) {
          return next(Object.assign(new Error(malformed instanceof Error ? malformed.message : String(malformed)), { status: 400, type: "entity.parse.failed" }));
        }
        next();
      });
    };
  }

  /** The body as text (decoded once), checked as JSON and turned into what validation sees; the text is kept. */
  private textBody(bodyFromText: (text: string) => unknown): BodyStep[] {
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

  /** A request no route takes: 404, whatever the method (no 405, no automatic OPTIONS answer). */
  private answerNoRoute(req: Request, res: Response): void {
    const message = `no route ${req.method} ${req.path.slice(0, 200)}`;
    res.status(404).setHeader("x-should-retry", "false");
    res.json({ detail: message, message });
  }

  /** The one answer to a failed request: logged by kind, headers and status from `errorAnswer`, the body by `render`. */
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

/** A call of `handle` with `input`, made at most once; the input is let go once the call is made. */
function handOver<I, T>(input: I, handle: (input: I) => T): () => T {
  let held: { readonly input: I } | null = { input };
  return () => {
    if (held === null) throw new Error("the handler was called already");
    const taken = held.input;
    held = null;
    return handle(taken);
  };
}

/** The handler's result answered as JSON, unless it answered itself. */
async function answerResult(pending: Promise<unknown>, res: Response): Promise<void> {
  const result = await pending;
  if (!res.headersSent && result !== undefined) answerJson(res, result);
}

/** Runs a handler; what it throws or rejects with goes to `fail`. */
function runHandler(handle: RouteHandler, req: Request, res: Response, fail: (err: unknown) => void): void {
  try {
    const ran: unknown = handle(req, res, fail);
    if (ran instanceof Promise) ran.catch(fail);
  } catch (thrown) {
    fail(thrown);
  }
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
