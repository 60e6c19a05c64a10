import { type Redis, ReplyError } from 'ioredis';
import type { ServerFacts } from './durability-plan.js';

/**
 * Asks one master what it would take to confirm a durable write: its version, its AOF
 * settings and its replicas. CONFIG may be refused (managed services rename or forbid it):
 * then `appendonly` comes from INFO persistence and `appendfsync` stays unknown. Only a
 * refusal is tolerated; a lost connection fails the probe.
 */
export async function probeServer(node: Redis): Promise<ServerFacts> {
  const server = serverName(node);
  const info = parseInfo(await node.info());
  let appendonly: boolean | null = null;
  let appendfsync: string | null = null;
  try {
    appendonly = (await configValue(node, 'appendonly')) === 'yes';
    appendfsync = await configValue(node, 'appendfsync');
  } catch (error) {
    if (!(error instanceof ReplyError)) throw error;
  }
  if (appendonly === null && info.has('aof_enabled')) appendonly = info.get('aof_enabled') === '1';
  const replicas = info.get('connected_slaves');
  return {
    server,
    version: info.get('redis_version') ?? null,
    appendonly,
    appendfsync,
    connectedReplicas: replicas === undefined ? null : Number(replicas),
  };
}

/**
 * host:port for messages: the configured address, or, through Sentinel (where the options
 * name no server), the address the connection reached.
 */
export function serverName(node: Redis): string {
  const socket = node.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  if (node.options.sentinels?.length && socket?.remoteAddress !== undefined) {
    return `${socket.remoteAddress}:${socket.remotePort}`;
  }
  return `${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`;
}

async function configValue(node: Redis, name: string): Promise<string | null> {
  const reply = (await node.config('GET', name)) as unknown;
  // RESP2 answers a flat [name, value] list.
  if (Array.isArray(reply) && typeof reply[1] === 'string') return reply[1];
  return null;
}

/** `key:value` lines of an INFO reply. */
export function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const separator = line.indexOf(':');
    if (separator <= 0 || line.startsWith('#')) continue;
    fields.set(line.slice(0, separator), line.slice(separator + 1).trim());
  }
  return fields;
}
