/** Settings the suite gives every service it starts, beside the defaults it tests. */

/**
 * How long the suite's services let a read wait for its project's writes (READ_YOUR_WRITES_WAIT_MS,
 * 5 s by default): a file's first writes can wait seconds for the log's threads to load on a loaded
 * machine, and a read answered without them would fail the test for the machine's load alone.
 */
export const SUITE_READ_YOUR_WRITES_WAIT_MS = "60000";
