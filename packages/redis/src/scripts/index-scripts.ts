import type { ScriptDefinition } from './script.js';

/**
 * The session index (B7) is one hash under the namespace's hash tag: field = session id,
 * value = `<order member>\\t<summary JSON>`, where the member is `<inverted updatedAt>:<id>`
 * (newest first, then id, in byte order), plus the field `~` that says an index exists
 * (an empty index is not a missing one, which a put or a delete never creates). Every change
 * is one HSET or HDEL, and a rebuild
 * one RENAME, so no crash leaves it half written.
 */

/**
 * Writes one entry, only into an index that exists: a missing index is rebuilt by core from
 * the documents, and an entry written into nothing would make one that lists only it.
 * KEYS: index. ARGV: session id, entry. Returns 1 when written.
 */
export const putIndexEntryScript: ScriptDefinition = {
  name: 'keepsakePutIndexEntry',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
};

/**
 * B7 with the documents (standalone): writes the entries whose document's last write is
 * the given one, so a refused write never touches the index, and only into an index that
 * exists, with ONE HSET. Sent after the documents' writes on the same connection: in the
 * same pipeline, or once per event-loop turn for every save of that turn (ScriptRunner's
 * grouped steps). KEYS: index, then each entry's document. ARGV: for each entry, its write
 * token (32), session id and entry. Returns the number of entries written.
 */
export const putIndexEntriesIfWrittenScript: ScriptDefinition = {
  name: 'keepsakePutIndexEntriesIfWritten',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local fields = {}
for index = 2, #KEYS do
  -- The write token alone, the 32 bytes before the trailer's last one: a write's token is
  -- unique, so only that write's own trailer holds it (bytes of any other shape do not).
  local token = redis.call('GETRANGE', KEYS[index], '-33', '-2')
  local at = (index - 2) * 3
  if token == ARGV[at + 1] then
    fields[#fields + 1] = ARGV[at + 2]
    fields[#fields + 1] = ARGV[at + 3]
  end
end
if #fields == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(fields))
return #fields / 2
`,
};

/**
 * A namespace with no session starts with an empty index (nothing to rebuild); one with
 * sessions and no index waits for core to rebuild it. KEYS: index, the sessions' id
 * registry.
 */
export const startIndexScript: ScriptDefinition = {
  name: 'keepsakeStartIndex',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('ZCARD', KEYS[2]) > 0 then return 0 end
redis.call('HSET', KEYS[1], '~', '1')
return 1
`,
};

/**
 * One page of the index: the `limit` + 1 smallest members after the cursor, found in one
 * pass over the hash (O(entries), on the server; see the README on its cost). KEYS: index.
 * ARGV: cursor member ('' for the first page), limit. Returns false when no index exists,
 * else the values of the page, in order.
 */
export const listIndexScript: ScriptDefinition = {
  name: 'keepsakeListIndex',
  lua: `
local all = redis.call('HGETALL', KEYS[1])
if #all == 0 then return false end
local cursor = ARGV[1]
local wanted = tonumber(ARGV[2]) + 1
local page = {}
for index = 1, #all, 2 do
  if all[index] ~= '~' then
    local value = all[index + 1]
    local tab = string.find(value, '\\t', 1, true)
    local member = tab and string.sub(value, 1, tab - 1) or ''
    if member > cursor then
      if #page < wanted or member < page[#page][1] then
        local position = #page + 1
        while position > 1 and page[position - 1][1] > member do position = position - 1 end
        table.insert(page, position, { member, value })
        if #page > wanted then table.remove(page) end
      end
    end
  end
end
local values = {}
for index, entry in ipairs(page) do values[index] = entry[2] end
return { values }
`,
};
