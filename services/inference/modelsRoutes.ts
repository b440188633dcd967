import { modelsListOp, type ModelEntry } from "../contract/chat.js";
import type { HttpApi } from "../http/app.js";
import { openAiError } from "./chatCompletionsRoutes.js";
import type { ModelLister } from "./models.js";

/**
 * `GET /v1/models`: every lister's models (base models, trained models the key reaches,
 * models served by the upstream), each id once (the first lister naming it wins).
 */
export function mountModelsList(api: HttpApi, listers: readonly ModelLister[]): void {
  api.mount(modelsListOp, async (_input, ctx) => {
    const lists = await Promise.all(listers.map((list) => list(ctx.principal)));
    const seen = new Set<string>();
    const data: ModelEntry[] = [];
    for (const entry of lists.flat()) {
      if (seen.has(entry.id)) continue;
      seen.add(entry.id);
      data.push(entry);
    }
    return { object: "list" as const, data };
  }, { renderError: openAiError });
}
