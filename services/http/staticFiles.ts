import express from "express";
import type { RouteHandler } from "./app.js";

type ServeStaticOptions = NonNullable<Parameters<typeof express.static>[1]>;

/**
 * A route handler for `prefix` and `${prefix}/{*rest}` that answers with the file at `rest` under `dir`
 * (serve-static: ETag, Last-Modified, ranges, HEAD), and hands any path it has no file for
 * (missing, a directory, a broken escape) to `fallback`.
 */
export function staticFiles(prefix: string, dir: string, options: ServeStaticOptions, fallback: RouteHandler): RouteHandler {
  const serve = express.static(dir, { ...options, fallthrough: true });
  return (req, res, fail) => {
    const url = req.url;
    const query = url.indexOf("?");
    // serve-static reads the path below its mount point, as Express's app.use handed it.
    req.url = (req.path.slice(prefix.length) || "/") + (query < 0 ? "" : url.slice(query));
    serve(req, res, (err?: unknown) => {
      req.url = url;
      if (err) {
        fail(err);
        return;
      }
      try {
        const ran: unknown = fallback(req, res, fail);
        if (ran instanceof Promise) ran.catch(fail);
      } catch (thrown) {
        fail(thrown);
      }
    });
  };
}
