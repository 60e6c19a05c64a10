/**
 * A Lua script of the adapter: EVALSHA, with the body (EVAL) on a connection that has not
 * run it yet or answered NOSCRIPT (script-call.ts on a client, ioredis `defineCommand` in a
 * pipeline; both per connection, also on each Cluster node). The number of keys is passed
 * with every call.
 *
 * A script runs atomically: no reader and no other writer sees it half done. Each script
 * of the adapter makes at most ONE write, checked before it is made: Redis logs a
 * single-write script to its AOF as that one command, and a multi-write one as MULTI/EXEC,
 * which Redis 7.0 replays wrongly when a crash cut it short (see the README).
 */
export interface ScriptDefinition {
  readonly name: string;
  readonly lua: string;
}

/**
 * Lua that reads a document's trailer (see document-format.ts): the stored revision
 * (16-digit text) and write token of its last write, or nil when there is no document;
 * `unreadable` when the bytes are not in the adapter's format. The offsets are strings: a
 * Lua number passed to redis.call is formatted with printf on every call.
 */
export const READ_TRAILER_LUA = `
local function read_trailer(key)
  local tail = redis.call('GETRANGE', key, '-64', '-1')
  if tail == '' then return nil, nil, false end
  if string.len(tail) ~= 64 or string.sub(tail, 1, 2) ~= '~1' or string.sub(tail, 64, 64) ~= '~' then
    return nil, nil, true
  end
  return string.sub(tail, 4, 19), string.sub(tail, 32, 63), false
end
`;
