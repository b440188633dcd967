import { ANY_KEY, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * The inference information endpoints (interface.md: "Inference information"): catalogs the
 * project ships as JSON files, each saying when its facts were gathered and where from, and
 * refreshed from upstream URLs when configured (INFERENCE_CATALOG_URLS).
 */
export const CATALOG_NAMES = ["analysis_models", "hardware", "router_models"] as const;
export type CatalogName = (typeof CATALOG_NAMES)[number];

export const Catalog = z
  .object({
    object: z.literal("catalog"),
    name: z.string(),
    as_of: z.string().openapi({ description: "Date (YYYY-MM-DD) of the facts" }),
    sources: z.array(z.string()).openapi({ description: "Public pages the facts come from" }),
    data: z.array(z.record(z.string(), z.unknown())),
  })
  .loose()
  .openapi("InferenceCatalog", { description: "Fields beyond these are kept as the catalog file or its upstream has them" });
export type Catalog = z.infer<typeof Catalog>;

const TAG = "Inference information";

export const CATALOG_OPERATIONS = {
  analysis_models: operation({ id: "inference_analysis_models", method: "get", path: "/inference/analysis/vendora/models", summary: "Analysis data about models", tag: TAG, role: "viewer", scope: ANY_KEY, response: Catalog }),
  hardware: operation({ id: "inference_hardware", method: "get", path: "/inference/vendorb/v2/hardware", summary: "Hardware information", tag: TAG, role: "viewer", scope: ANY_KEY, response: Catalog }),
  router_models: operation({ id: "inference_router_models", method: "get", path: "/inference/router/vendorc/models", summary: "Router model list", tag: TAG, role: "viewer", scope: ANY_KEY, response: Catalog }),
} as const;
