import { randomUUID } from "node:crypto";
import type { Request, Response } from "express";
import type { Logger } from "pino";
import { httpDuration, httpRejects, httpRequests } from "../metrics.js";

/**
 * Per request: an id (the caller's `X-Request-Id` when it is a plain token, else a new
 * UUID), echoed in the answer's `X-Request-Id`; a child logger carrying it; on the answer's
 * end one JSON log line and the request metrics (metrics.ts), labelled by route: the
 * matched route's path template (`/call/start`, `/calls/{id}`, `/ui/{*rest}`...) or
 * `unmatched`, never the raw URL (bounded label values).
 */
export const REQUEST_ID_HEADER = "x-request-id";
const ACCEPTED_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
/** Answers cut before their end (the client went away), nginx's code for it. */
const CLIENT_CLOSED = 499;

const routes = new WeakMap<Response, string>();
/** Each answer's request id, and its child logger once one was asked for (most requests never log but their line). */
const requests = new WeakMap<Response, { readonly id: string; readonly log: Logger; child: Logger | null }>();

/** Names the route of this answer in logs and metrics (HttpApi's dispatcher: the matched route's template). */
export function nameRoute(res: Response, route: string): void {
  routes.set(res, route);
}

/** The request's logger (with its `request_id`), or `fallback` outside a request. */
export function requestLogger(res: Response, fallback: Logger): Logger {
  const request = requests.get(res);
  if (!request) return fallback;
  request.child ??= request.log.child({ request_id: request.id });
  return request.child;
}

function requestIdOf(req: Request): string {
  const header = req.headers[REQUEST_ID_HEADER];
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && ACCEPTED_ID.test(given) ? given : randomUUID();
}

function routeOf(res: Response): string {
  return routes.get(res) ?? "unmatched";
}

/** Starts the request's log: called once per request, first thing, by HttpApi's dispatcher. */
export function requestLog(log: Logger) {
  return (req: Request, res: Response): void => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(req);
    res.setHeader("X-Request-Id", requestId);
    requests.set(res, { id: requestId, log, child: null });
    res.once("close", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED;
      const route = routeOf(res);
      httpRequests.inc({ route, method: req.method, status: String(status) });
      httpDuration.observe({ route, method: req.method }, seconds);
      if ((status >= 400 && status < 500 && status !== CLIENT_CLOSED) || status === 503) httpRejects.inc({ route, status: String(status) });
      if (!log.isLevelEnabled("info")) return;
      // The request's child logger only where the request already made one: a child per line costs more than the line.
      const line = { method: req.method, route, path: req.path, status, ms: Math.round(seconds * 1e4) / 10 };
      const child = requests.get(res)?.child;
      if (child) child.info(line, "request");
      else log.info({ request_id: requestId, ...line }, "request");
    });
  };
}
