import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** The longest a refused request's connection stays open after its answer. */
const LINGER_MS = 2000;
/** The most of a refused body read (and dropped) after the answer, for clients that send it all before reading. */
const LINGER_MAX_BYTES = 32 * 1024 * 1024;
const CHECK_EVERY_MS = 20;

const lingering = new WeakSet<Socket>();

/**
 * Closes the connection after this answer without losing the answer to a reset. The body
 * of the refused request is still arriving, and closing a socket with unread bytes makes
 * the kernel reset the connection: the reset can reach the client before it has read the
 * answer, which it then never sees (EPIPE or ECONNRESET instead of a 413). So, once the
 * answer is written, the connection is half-closed and what the client still sends is
 * read and dropped until it ends its side, LINGER_MAX_BYTES more arrived or LINGER_MS
 * passed (as web servers' "lingering close" does).
 */
export function closeAfterAnswer(res: ServerResponse): void {
  res.setHeader("Connection", "close");
  const socket = res.socket;
  if (!socket || lingering.has(socket)) return;
  lingering.add(socket);
  // Node's server calls destroySoon() once an answer with Connection: close is written;
  // this is the one place where its immediate destroy can be replaced.
  socket.destroySoon = () => linger(socket);
}

function linger(socket: Socket): void {
  if (socket.destroyed) return;
  socket.end();
  const readBefore = socket.bytesRead;
  const close = () => {
    clearInterval(check);
    clearTimeout(deadline);
    socket.destroy();
  };
  const check = setInterval(() => socket.bytesRead - readBefore > LINGER_MAX_BYTES && close(), CHECK_EVERY_MS).unref();
  const deadline = setTimeout(close, LINGER_MS).unref();
  socket.once("end", close);
  socket.once("close", close);
}
