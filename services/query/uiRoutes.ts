import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { HttpApi, RouteHandler } from "../http/app.js";
import { staticFiles } from "../http/staticFiles.js";

/** Where scripts/build-ui.sh writes the built web UI (git-ignored). */
export const UI_BUILD_DIR = fileURLToPath(new URL("../../ui/dist/", import.meta.url));

/**
 * The web UI: static files under `/ui/`, every other path under it answered with index.html
 * (the app routes deep links itself), and `/` redirected to `/ui/`. No API operation: the UI
 * is a client of the API like any other and keeps no state here.
 */
export function mountUiRoutes(api: HttpApi, dir: string = UI_BUILD_DIR): void {
  const index = join(dir, "index.html");
  const answerIndex: RouteHandler = (_req, res) => {
    if (!existsSync(index)) {
      res.status(404).json({ detail: "the web UI is not built: run `make install`", message: "the web UI is not built: run `make install`" });
      return;
    }
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(index);
  };
  const noAsset: RouteHandler = (_req, res) => void res.status(404).json({ detail: "no such asset", message: "no such asset" });
  api.route("get", "/", (_req, res) => res.redirect(302, "/ui/"));
  // Hashed asset names: cache them for good; index.html is always asked again.
  const assets = staticFiles("/ui/assets", join(dir, "assets"), { immutable: true, maxAge: "365d" }, noAsset);
  api.route("get", "/ui/assets", assets);
  api.route("get", "/ui/assets/{*rest}", assets);
  api.route("get", "/ui/{*rest}", staticFiles("/ui", dir, { index: false, redirect: false }, answerIndex));
  api.route("get", "/ui", answerIndex);
}
