import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * FAULT INJECTION: a TCP proxy (node:net) between a client and a Redis server, so a test
 * can cut connections, black-hole them, drop the server's replies or add latency, as a
 * network would. A black hole holds bytes (a real one drops packets and TCP retransmits
 * them): `heal()` delivers what was held to connections still open.
 */
export class FaultProxy {
  readonly host = '127.0.0.1';
  readonly port: number;
  /** Connections accepted so far (a reconnection adds one). */
  connections = 0;
  private readonly server: Server;
  private readonly pairs = new Set<Pair>();
  private blackholed = false;
  private droppingReplies = false;
  private latencyMs = 0;

  private constructor(server: Server, port: number) {
    this.server = server;
    this.port = port;
  }

  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy has no port');
    const proxy = new FaultProxy(server, address.port);
    server.on('connection', (client) => proxy.accept(client, target));
    return proxy;
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** Destroys every open connection at once, both sides (a reset). */
  cut(): void {
    for (const pair of this.pairs) pair.destroy();
  }

  /** Holds every byte in both directions until `heal()`; connections stay open. */
  blackhole(): void {
    this.blackholed = true;
  }

  /** Delivers what a black hole held, in order, and forwards again. */
  heal(): void {
    this.blackholed = false;
    for (const pair of this.pairs) pair.flush();
  }

  /** The server's replies are thrown away (the commands still reach it and run). */
  dropReplies(dropping: boolean): void {
    this.droppingReplies = dropping;
  }

  /** Delays every chunk by `ms` in each direction, keeping order. */
  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    this.connections++;
    const upstream = createConnection(target);
    const pair = new Pair(client, upstream, this);
    this.pairs.add(pair);
    const forget = () => {
      pair.destroy();
      this.pairs.delete(pair);
    };
    client.on('close', forget);
    upstream.on('close', forget);
    client.on('error', forget);
    upstream.on('error', forget);
  }

  /** @internal what a pair asks for each chunk. */
  decide(direction: 'up' | 'down'): 'hold' | 'drop' | number {
    if (this.blackholed) return 'hold';
    if (direction === 'down' && this.droppingReplies) return 'drop';
    return this.latencyMs;
  }
}

class Pair {
  private readonly held: Array<{ to: Socket; chunk: Buffer }> = [];
  private readonly due = { up: 0, down: 0 };

  private readonly client: Socket;
  private readonly upstream: Socket;
  private readonly proxy: FaultProxy;

  constructor(client: Socket, upstream: Socket, proxy: FaultProxy) {
    this.client = client;
    this.upstream = upstream;
    this.proxy = proxy;
    client.on('data', (chunk: Buffer) => this.forward(chunk, upstream, 'up'));
    upstream.on('data', (chunk: Buffer) => this.forward(chunk, client, 'down'));
  }

  flush(): void {
    for (const { to, chunk } of this.held.splice(0)) if (!to.destroyed) to.write(chunk);
  }

  destroy(): void {
    this.held.length = 0;
    this.client.destroy();
    this.upstream.destroy();
  }

  private forward(chunk: Buffer, to: Socket, direction: 'up' | 'down'): void {
    const decision = this.proxy.decide(direction);
    if (decision === 'drop') return;
    if (decision === 'hold' || this.held.length > 0) {
      this.held.push({ to, chunk });
      return;
    }
    if (decision === 0) {
      to.write(chunk);
      return;
    }
    // Later chunks never overtake earlier ones.
    const at = Math.max(Date.now() + decision, this.due[direction]);
    this.due[direction] = at;
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, at - Date.now());
  }
}
