import { INDEX_PUT_LUA, type ScriptDefinition } from './script.js';

/**
 * The session index (B7) is three structures under the namespace's hash tag: `entries`
 * (id → summary JSON), `order` (a sorted set of `<inverted updatedAt>:<id>` members, all
 * of score 0, so lexicographic order is newest first, then id) and `positions` (id → its
 * member, to move an entry whose `updatedAt` changed), plus `exists`, set once an index
 * exists (an empty index is not a missing one).
 */

/** KEYS: entries, positions, order, exists. ARGV: id, member, entry JSON. */
export const putIndexEntryScript: ScriptDefinition = {
  name: 'keepsakePutIndexEntry',
  lua: `${INDEX_PUT_LUA}
index_put(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3])
return 1
`,
};

/** KEYS: entries, positions, order. ARGV: id. */
export const deleteIndexEntryScript: ScriptDefinition = {
  name: 'keepsakeDeleteIndexEntry',
  lua: `
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then redis.call('ZREM', KEYS[3], old) end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`,
};

/**
 * One page of the index. KEYS: entries, order, exists. ARGV: lexicographic start ('-' or
 * '(<member>'), limit. Returns false when no index exists, else { members, entries }
 * with one more member than asked when there is a next page.
 */
export const listIndexScript: ScriptDefinition = {
  name: 'keepsakeListIndex',
  lua: `
if redis.call('EXISTS', KEYS[3]) == 0 then return false end
local members = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], '+', 'LIMIT', 0, tonumber(ARGV[2]) + 1)
if #members == 0 then return { members, {} } end
local ids = {}
for index, member in ipairs(members) do
  ids[index] = string.sub(member, string.find(member, ':', 1, true) + 1)
end
return { members, redis.call('HMGET', KEYS[1], unpack(ids)) }
`,
};

/**
 * Writes one chunk of a rebuilt index into build keys, which expire in an hour, so a rebuild
 * cut short by a crash leaves nothing behind for long. KEYS: entries, positions, order (of
 * the build). ARGV: triples of id, member, entry JSON.
 */
export const fillIndexBuildScript: ScriptDefinition = {
  name: 'keepsakeFillIndexBuild',
  lua: `
for index = 1, #ARGV, 3 do
  redis.call('ZADD', KEYS[3], 0, ARGV[index + 1])
  redis.call('HSET', KEYS[2], ARGV[index], ARGV[index + 1])
  redis.call('HSET', KEYS[1], ARGV[index], ARGV[index + 2])
end
for index = 1, 3 do redis.call('EXPIRE', KEYS[index], 3600) end
return 1
`,
};

/**
 * Swaps a finished build in for the live index, in one atomic step (a reader sees the old
 * index or the new one). KEYS: build entries, positions, order; live entries, positions,
 * order, exists.
 */
export const swapIndexBuildScript: ScriptDefinition = {
  name: 'keepsakeSwapIndexBuild',
  lua: `
for index = 1, 3 do
  if redis.call('EXISTS', KEYS[index]) == 1 then
    redis.call('PERSIST', KEYS[index])
    redis.call('RENAME', KEYS[index], KEYS[index + 3])
  else
    redis.call('DEL', KEYS[index + 3])
  end
end
redis.call('SET', KEYS[7], '1')
return 1
`,
};
