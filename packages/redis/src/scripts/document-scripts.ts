import { INDEX_PUT_LUA, type ScriptDefinition } from './script.js';

/**
 * Reads a document and its deltas in one atomic step, so base and deltas always belong to
 * one state (B1). KEYS: document hash, deltas list. Returns false, or
 * { revision, base, { deltas… } }.
 */
export const readDocumentScript: ScriptDefinition = {
  name: 'keepsakeReadDocument',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local head = redis.call('HMGET', KEYS[1], 'r', 'b')
return { head[1] or '', head[2] or '', redis.call('LRANGE', KEYS[2], 0, -1) }
`,
};

/**
 * The conditional write (B4): compares the stored revision with the expected one and, only
 * when they match, writes the full base (dropping the deltas) or appends a delta.
 *
 * KEYS: document hash, deltas list; on a standalone server also the collection's id
 * registry and the four index keys (the registry entry and, for a session, its index
 * entry then change in the same atomic step; on Cluster they live on another slot and the
 * adapter writes them itself).
 * ARGV: kind ('full' | 'delta'), revision, text, expected revision ('' for none), write
 * token, id, [index member, index entry JSON].
 *
 * Returns { 1 } when written, { 1, 1 } when this very write (same token) is what is
 * stored already — a resend of a write that landed, answered as the success it was —
 * and { 0, current revision or -1 } when refused.
 */
export const writeDocumentScript: ScriptDefinition = {
  name: 'keepsakeWriteDocument',
  lua: `${INDEX_PUT_LUA}
local current = redis.call('HGET', KEYS[1], 'r')
if current and current == ARGV[2] and redis.call('HGET', KEYS[1], 'w') == ARGV[5] then
  return { 1, 1 }
end
local function refused()
  return { 0, current and tonumber(current) or -1 }
end
if ARGV[4] == '' then
  if current then return refused() end
elseif current ~= ARGV[4] then
  return refused()
end
if ARGV[1] == 'delta' then
  if not current then return refused() end
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('HSET', KEYS[1], 'r', ARGV[2], 'w', ARGV[5])
else
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'r', ARGV[2], 'b', ARGV[3], 'w', ARGV[5])
end
if KEYS[3] then redis.call('ZADD', KEYS[3], 0, ARGV[6]) end
if KEYS[4] then index_put(KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[6], ARGV[7], ARGV[8]) end
return { 1 }
`,
};

/**
 * Deletes a document and its deltas, only at the expected revision when one is given.
 * KEYS: document hash, deltas list, [id registry (standalone)]. ARGV: expected revision
 * ('' for any), id. Returns { 1 } or { 0, current revision or -1 }.
 */
export const deleteDocumentScript: ScriptDefinition = {
  name: 'keepsakeDeleteDocument',
  lua: `
local current = redis.call('HGET', KEYS[1], 'r')
if ARGV[1] ~= '' and current ~= ARGV[1] then
  return { 0, current and tonumber(current) or -1 }
end
redis.call('DEL', KEYS[1], KEYS[2])
if KEYS[3] then redis.call('ZREM', KEYS[3], ARGV[2]) end
return { 1 }
`,
};

/**
 * A2: moves a document's bytes aside intact, base and deltas joined by newlines, to a key
 * of the same slot, and removes the document, in one atomic step. KEYS: document hash,
 * deltas list, quarantine key, [id registry, quarantine list (standalone)]. ARGV: id,
 * quarantine record JSON. Returns 1 when there was a document to move.
 */
export const quarantineDocumentScript: ScriptDefinition = {
  name: 'keepsakeQuarantineDocument',
  lua: `
local moved = 0
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  local parts = { redis.call('HGET', KEYS[1], 'b') or '' }
  for _, delta in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do parts[#parts + 1] = delta end
  redis.call('SET', KEYS[3], table.concat(parts, '\\n'))
  redis.call('DEL', KEYS[1], KEYS[2])
  moved = 1
  if KEYS[4] then redis.call('ZREM', KEYS[4], ARGV[1]) end
end
if KEYS[5] then redis.call('RPUSH', KEYS[5], ARGV[2]) end
return moved
`,
};
