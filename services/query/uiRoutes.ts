import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import express from "express";
import type { HttpApi } from "../http/app.js";

/** Where scripts/build-ui.sh writes the built web UI (git-ignored). */
export const UI_BUILD_DIR = fileURLToPath(new URL("../../ui/dist/", import.meta.url));

/**
 * The web UI: static files under `/ui/`, every other path under it answered with index.html
 * (the app routes deep links itself), and `/` redirected to `/ui/`. No API operation: the UI
 * is a client of the API like any other and keeps no state here.
 */
export function mountUiRoutes(api: HttpApi, dir: string = UI_BUILD_DIR): void {
  const index = join(dir, "index.html");
  api.app.get("/", (_req, res) => res.redirect(302, "/ui/"));
  // Hashed asset names: cache them for good; index.html is always asked again.
  api.app.use("/ui/assets", express.static(join(dir, "assets"), { immutable: true, maxAge: "365d" }));
  api.app.get("/ui/assets/{*rest}", (_req, res) => void res.status(404).json({ detail: "no such asset", message: "no such asset" }));
  api.app.use("/ui", express.static(dir, { index: false, redirect: false }));
  api.app.get(["/ui", "/ui/{*rest}"], (_req, res) => {
    if (!existsSync(index)) {
      res.status(404).json({ detail: "the web UI is not built: run `make install`", message: "the web UI is not built: run `make install`" });
      return;
    }
    res.setHeader("Cache-Control", "no-cache");
    res.sendFile(index);
  });
}
