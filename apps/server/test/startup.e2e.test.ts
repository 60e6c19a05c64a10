import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChildServerToExit } from './helpers/child-server.js';

let dataDirectory: string;
let occupant: Server;
let busyPort: number;

beforeAll(async () => {
  dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-startup-'));
  occupant = createServer();
  occupant.listen(0, '127.0.0.1');
  await once(occupant, 'listening');
  busyPort = (occupant.address() as { port: number }).port;
});
afterAll(async () => {
  occupant.close();
  await rm(dataDirectory, { recursive: true, force: true });
});

describe('startup problems are one line naming the setting to change', () => {
  it('a PORT already in use: exit 1 with one line naming PORT, no stack trace', async () => {
    const { code, output } = await runChildServerToExit({
      PORT: String(busyPort),
      KEEPSAKE_DATA_DIR: dataDirectory,
    });
    expect(code).toBe(1);
    const lines = output.trim().split('\n');
    expect(lines, output).toEqual([
      `PORT ${busyPort} is already in use on 127.0.0.1: stop whatever listens there, or set PORT to a free port (PORT=0 picks one)`,
    ]);
  });
});
