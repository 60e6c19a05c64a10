import type { ServerConfig } from './config/config-schema.js';

/**
 * One line naming the setting to change when the server cannot listen, instead of a
 * stack trace. Null for errors that are not about the address (those keep their stack).
 */
export function describeListenError(error: unknown, config: ServerConfig): string | null {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const { host, port } = config.server;
  switch (code) {
    case 'EADDRINUSE':
      return `PORT ${port} is already in use on ${host}: stop whatever listens there, or set PORT to a free port (PORT=0 picks one)`;
    case 'EACCES':
      return `PORT ${port} on ${host} needs privileges this process does not have: set PORT to 1024 or above`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return `HOST ${host} is not an address of this machine: set HOST to one of its addresses (127.0.0.1 by default)`;
    default:
      return null;
  }
}
