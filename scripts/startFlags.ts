import { readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * How `make start` runs the service (its node and node's flags), the one definition the other
 * ways to start it follow: the benches start it so (bench/support.ts), `npm start` runs
 * `make start`, and test/deploy checks that the image gives the same flags.
 */
const START = /(node|\$\((\w+)\)) ((?:--\S+ )*)build\/services\/main\.js/;

function startCommand(command: string): RegExpMatchArray {
  const found = command.match(START);
  if (!found) throw new Error("no `node … build/services/main.js` in the command");
  return found;
}

const nodeFlagsOf = (command: string): string[] => startCommand(command)[3]!.trim().split(" ").filter(Boolean);

const makefile = (root: string): string => readFileSync(join(root, "Makefile"), "utf8");

export const makeStartFlags = (root: string): string[] => nodeFlagsOf(makefile(root));

/** The node binary `make start` runs: `node` of the PATH, or the path a Makefile variable names (relative to `root`). */
export function makeStartNode(root: string): string {
  const text = makefile(root);
  const variable = startCommand(text)[2];
  if (variable === undefined) return "node";
  const defined = new RegExp(`^${variable} := (\\S+)$`, "m").exec(text);
  if (!defined) throw new Error(`the Makefile does not define ${variable}`);
  return join(root, defined[1]!);
}
