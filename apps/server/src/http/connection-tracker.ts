import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Knows which sockets are serving a request. Node's `closeIdleConnections()` leaves alone
 * a socket that never sent a request (HTTP clients open spare ones), which would keep
 * `server.close()` waiting; shutdown closes every socket with no request in flight.
 */
export class ConnectionTracker {
  private readonly inFlight = new Map<Socket, number>();

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      this.inFlight.set(socket, 0);
      socket.once('close', () => this.inFlight.delete(socket));
    });
    server.on('request', (request, response) => {
      const socket = request.socket as Socket;
      this.inFlight.set(socket, (this.inFlight.get(socket) ?? 0) + 1);
      response.once('close', () => {
        const count = this.inFlight.get(socket);
        if (count !== undefined) this.inFlight.set(socket, Math.max(0, count - 1));
      });
    });
  }

  /** Destroys every socket with no request in flight; returns how many. */
  closeIdle(): number {
    let closed = 0;
    for (const [socket, count] of this.inFlight) {
      if (count === 0) {
        socket.destroy();
        closed++;
      }
    }
    return closed;
  }
}
