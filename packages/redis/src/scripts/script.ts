/**
 * A Lua script the adapter runs with ioredis `defineCommand`: EVALSHA, falling back to EVAL
 * on a connection that has not loaded it (ioredis does that per connection, also on each
 * Cluster node). The number of keys is passed with every call, since some scripts take the
 * namespace's keys as well when the server is standalone.
 *
 * A script runs atomically: no reader and no other writer sees its writes half done, and a
 * connection lost mid-call leaves either all of them or none (B1). Every script that
 * writes checks everything before its first write, because Redis does not roll back the
 * writes of a script that fails half way.
 */
export interface ScriptDefinition {
  readonly name: string;
  readonly lua: string;
}

/**
 * Lua shared by the document write (standalone: the index entry rides on the write) and
 * the index's own write: replaces one summary and its position in the order.
 */
export const INDEX_PUT_LUA = `
local function index_put(entries, positions, order, exists, id, member, json)
  local old = redis.call('HGET', positions, id)
  if old then redis.call('ZREM', order, old) end
  redis.call('ZADD', order, 0, member)
  redis.call('HSET', positions, id, member)
  redis.call('HSET', entries, id, json)
  redis.call('SET', exists, '1')
end
`;
