import { createClient } from "@clickhouse/client";
import { createChdbConnection } from "chdb/connection";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { InjectedClickHouse } from "../../services/store/clickhouse.js";

/**
 * ClickHouse 26.7 embedded in this process through the npm package `chdb`, whose
 * `chdb/connection` is a connection for @clickhouse/client: the suite's compatibility run.
 * It lives under test/support, and `chdb` is a devDependency, because only the tests use it:
 * the connection is experimental (below) and production talks HTTP to a server.
 *
 * What the connection does differently from HTTP (chdb 3.4.0, checked in its source and by
 * trying): the client's `database` option never reaches it (the client keeps it for its
 * HTTP requests), so the store puts `USE` ahead of each statement; request bodies are read
 * as UTF-8 text, so RowBinary bytes of 0x80 and above arrive replaced, and the store writes
 * them to a file the engine reads `FROM INFILE`; results are read whole before the first
 * row is handed on (the store's `stream` still works, without streaming); per-query
 * settings are sent as `SET` and stay on the connection for its later statements.
 *
 * The engine binds one data directory per process: each test process (a vitest fork) takes
 * its own under the run's directory. Each store opens its own connection to it, so the
 * current database (`USE`) and `SET` settings of one store never reach another's.
 */
let opened: InjectedClickHouse | null = null;

/**
 * chdb declares its connection with the types of @clickhouse/client-common, which the client
 * now bundles in its own copy; the two copies' settings lists differ, so the types do not meet.
 */
type ClientConnection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>["connection"]>;
const chdbConnection = (path: string) => createChdbConnection({ path }) as unknown as ClientConnection;

export function chdbClickHouse(runDir: string): InjectedClickHouse {
  if (opened) return opened;
  const dir = join(runDir, `pid-${process.pid}`);
  const data = join(dir, "data");
  const binaryRows = join(dir, "binary-rows");
  mkdirSync(binaryRows, { recursive: true });
  opened = {
    name: `chdb:${data}`,
    client: () => createClient({ connection: chdbConnection(data) }),
    ignoresDatabaseOption: true,
    binaryRowsDir: binaryRows,
  };
  return opened;
}
