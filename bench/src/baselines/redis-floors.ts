import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type CpuSample, withProcessCpu } from '../harness/process-cpu.js';

/**
 * Hand-written ioredis loops that do the work of Keepsake's Redis writes and nothing else
 * (no Keepsake code): the floors its targets are set against (issue 39). Each opens the same
 * number of connections as the adapter, puts each session (or stream) on one of them, and
 * lets ioredis send every command issued in one event-loop turn on a connection in one
 * socket write (`enableAutoPipelining`), as the adapter corks its connections per turn.
 */

/** How a floor save makes its two writes one atomic step in one round trip. */
export type AtomicSaveMode = 'evalsha' | 'multi';

/**
 * One script per save: APPEND the record to the session's document, HSET its index entry.
 * A script runs atomically, so no reader ever sees one without the other.
 */
const SAVE_SCRIPT = `
redis.call('APPEND', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
`;

type FloorClient = Redis & {
  floorSave(
    document: string,
    index: string,
    record: string,
    id: string,
    entry: string,
  ): Promise<number>;
};

/** `connections` connections to the server on `port`, ready, with the save script defined. */
export async function openFloorClients(port: number, connections: number): Promise<FloorClient[]> {
  const clients = Array.from({ length: connections }, () => {
    const client = new Redis({ host: '127.0.0.1', port, enableAutoPipelining: true });
    client.defineCommand('floorSave', { numberOfKeys: 2, lua: SAVE_SCRIPT });
    return client as FloorClient;
  });
  await Promise.all(clients.map((client) => client.ping()));
  return clients;
}

export async function closeFloorClients(clients: readonly Redis[]): Promise<void> {
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())));
}

/**
 * `sessions` sessions at once, each making `saves` saves one after the other (each waits
 * for the previous one's reply, as a caller of `store.save` does). A save builds a message
 * of `messageBytes` characters and its summary (id, title, times, count) as JSON, then
 * appends the message to the session's string and writes the summary into one index hash,
 * atomically (a script, or MULTI/EXEC) in one round trip. With `appendfsync always` the
 * reply follows the fsync. Returns the stretch's wall time and this process's CPU.
 */
export async function indexedSaveFloor(
  clients: readonly FloorClient[],
  options: {
    label: string;
    sessions: number;
    saves: number;
    messageBytes: number;
    mode: AtomicSaveMode;
  },
): Promise<CpuSample> {
  const { label, sessions, saves, messageBytes, mode } = options;
  const index = `floor:${label}:index`;
  const content = 'm'.repeat(messageBytes);
  const createdAt = Date.now();
  return withProcessCpu(sessions * saves, () =>
    Promise.all(
      Array.from({ length: sessions }, async (_, session) => {
        const client = clients[session % clients.length]!;
        const id = `${label}-f${session}`;
        const document = `floor:{${id}}:session`;
        for (let count = 1; count <= saves; count++) {
          const updatedAt = Date.now();
          const record = JSON.stringify({
            id: randomUUID(),
            role: 'user',
            content,
            createdAt: updatedAt,
          });
          const entry = JSON.stringify({
            id,
            title: '',
            createdAt,
            updatedAt,
            messageCount: count,
            pending: false,
          });
          if (mode === 'evalsha') {
            await client.floorSave(document, index, record, id, entry);
          } else {
            const replies = await client
              .multi()
              .append(document, record)
              .hset(index, id, entry)
              .exec();
            if (replies === null || replies.some(([error]) => error !== null)) {
              throw new Error(`floor save of ${id} failed`);
            }
          }
        }
      }),
    ),
  );
}

/**
 * `streams` streams at once, each sending `appends` records without waiting for a reply
 * (pipelined). A record is what the adapter's journal stores for an event: its JSON (ids,
 * sequence, type, time, data) as one XADD entry whose id is the sequence (`<n>-0`), with the
 * fields the adapter writes (`f` first sequence, `w` write token, sequence → record).
 */
export async function journalAppendFloor(
  clients: readonly Redis[],
  options: { label: string; streams: number; appends: number; payload: string },
): Promise<CpuSample> {
  const { label, streams, appends, payload } = options;
  return withProcessCpu(streams * appends, () =>
    Promise.all(
      Array.from({ length: streams }, (_, stream) => {
        const client = clients[stream % clients.length]!;
        const sessionId = `${label}-j${stream}`;
        const runId = `run-${stream}`;
        const key = `floor:{${sessionId}}:journal:${runId}`;
        const token = randomBytes(9).toString('base64url');
        return Promise.all(
          Array.from({ length: appends }, (_, index) => {
            const sequence = index + 1;
            const data = JSON.stringify({ text: payload });
            const text = `{"sessionId":"${sessionId}","runId":"${runId}","sequence":${sequence},"eventId":"${randomUUID()}","type":"token","at":${Date.now()},"data":${data}}`;
            const field = String(sequence);
            return client.xadd(
              key,
              `${field}-0`,
              'f',
              field,
              'w',
              `${token}.${index}`,
              field,
              text,
            );
          }),
        );
      }),
    ),
  );
}
