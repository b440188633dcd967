/**
 * The layers of services/, checked in `make test` (dependency-cruiser):
 *
 *   ground (files directly under services/: times, ids, json, refs, digests, errors, config)
 *     ← contract ← queue ← store (reads the event types) ; auth ← http, worker ← ingest, query,
 *     training, inference ← mcp ← wiring (main, service, cluster, resources)
 *
 *   mcp (the MCP server at /mcp) is a client of the read side: its tools read through the query
 *   routes' repositories and call views, so it sits above query and nothing below imports it.
 *
 *   otlp (OTLP export bodies: decoding, and the mapping of spans to call events) sits on the
 *   queue's event types: ingest checks an export with it, the worker maps the spans it stores.
 *
 *   lm (the built-in language model: tokenizer, transformer, sampling, training steps) is a
 *   library beside contract: it imports only ground, and the worker and services above use it.
 *
 * An import may only point down (to a layer to its left), and no files may import each
 * other in a circle.
 *
 * The layers of ui/src, checked in the same run:
 *
 *   ground (api, format, hooks, types, project, router, traceTotals) ← components ← access
 *     ← pages ← App ← main
 *
 * A page is reached only through App's table of pages; the ground knows no React component
 * of ours (router's `Link` is its own).
 */
const WIRING = "^services/(main|service|cluster|resources)\\.ts$";
const GROUND = "^services/[^/]+\\.ts$";
const layer = (name) => `^services/${name}/`;
const SERVICES = "ingest|query|training|inference|mcp";
const UI = "^ui/src/";
const UI_GROUND = `${UI}(api|format|hooks|types|project|router|traceTotals)\\.tsx?$`;
const UI_ABOVE_GROUND = `${UI}(components/|pages/|access|App|main)`;

/** `from` may not import anything in `to` (besides type-only imports, which are still imports: no exception). */
const forbid = (name, from, to) => ({ name, severity: "error", from: { path: from, pathNot: WIRING }, to: { path: to } });

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", comment: "files that import each other in a circle", from: { path: "^services/" }, to: { circular: true } },
    forbid("ground-imports-nothing-above", GROUND, `${WIRING}|^services/[^/]+/`),
    forbid("contract-imports-only-ground", layer("contract"), `${WIRING}|${layer(`(http|${SERVICES}|worker|store|queue|auth|lm|otlp)`)}`),
    forbid("lm-imports-only-ground", layer("lm"), `${WIRING}|${layer(`(http|${SERVICES}|worker|store|queue|auth|contract|otlp)`)}`),
    forbid("queue-below-http-worker", layer("queue"), `${WIRING}|${layer(`(http|${SERVICES}|worker|store|otlp)`)}`),
    forbid("otlp-below-ingest-worker", layer("otlp"), `${WIRING}|${layer(`(http|${SERVICES}|worker|store|auth)`)}`),
    forbid("store-below-http-worker", layer("store"), `${WIRING}|${layer(`(http|${SERVICES}|worker|otlp)`)}`),
    forbid("auth-below-http", layer("auth"), `${WIRING}|${layer(`(http|${SERVICES}|worker|store|queue|otlp)`)}`),
    forbid("http-knows-no-storage", layer("http"), `${WIRING}|${layer(`(${SERVICES}|worker|store|otlp)`)}`),
    forbid("worker-below-services", layer("worker"), `${WIRING}|${layer(`(http|${SERVICES})`)}`),
    forbid("services-below-wiring", layer(`(${SERVICES})`), WIRING),
    forbid("services-below-mcp", layer("(ingest|query|training|inference)"), layer("mcp")),
    { name: "ui-no-circular", severity: "error", comment: "UI files that import each other in a circle", from: { path: UI }, to: { circular: true } },
    { name: "ui-ground-imports-no-component", severity: "error", from: { path: UI_GROUND }, to: { path: UI_ABOVE_GROUND } },
    { name: "ui-components-below-pages", severity: "error", from: { path: `${UI}components/` }, to: { path: `${UI}(pages/|access|App|main)` } },
    { name: "ui-access-below-pages", severity: "error", from: { path: `${UI}access` }, to: { path: `${UI}(pages/|App|main)` } },
    { name: "ui-pages-below-app", severity: "error", from: { path: `${UI}pages/` }, to: { path: `${UI}(App|main)` } },
    { name: "ui-app-below-main", severity: "error", from: { path: `${UI}App` }, to: { path: `${UI}main` } },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js"] },
  },
};
