import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { CONFIG_VARIABLES, EnvVariables, REMOVED_VARIABLES } from "../../services/config.js";
import { CONFIGURATION_DOC, renderConfigurationDoc } from "../../scripts/configDoc.js";

describe("docs/configuration.md", () => {
  it("gives every variable the service reads a description in services/config.ts", () => {
    const undescribed = Object.entries(EnvVariables.shape)
      .filter(([, schema]) => !(schema as z.ZodType).description?.trim())
      .map(([name]) => name);
    expect(undescribed).toEqual([]);
  });

  it("is what scripts/configDoc.ts renders from services/config.ts (run `npx tsx scripts/configDoc.ts`)", () => {
    expect(readFileSync(CONFIGURATION_DOC, "utf8")).toBe(renderConfigurationDoc());
  });

  it("names every variable read and every variable removed", () => {
    const doc = renderConfigurationDoc();
    for (const name of [...CONFIG_VARIABLES, ...Object.keys(REMOVED_VARIABLES)]) expect(doc).toContain(`\`${name}\``);
  });
});
