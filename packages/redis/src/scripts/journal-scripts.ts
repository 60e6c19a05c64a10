import type { ScriptDefinition } from './script.js';

/**
 * E2: appends a batch of records to a run's stream with explicit entry ids
 * `<sequence>-0`, so the server itself refuses an id that is not above the last one. The
 * first sequence must be exactly one more than the last stored (1 for a new journal), and
 * the batch must be consecutive: both are checked before the first write. The last entry
 * of a batch carries the write token, so a resent batch that already landed is answered
 * as the success it was instead of being refused or written twice.
 *
 * KEYS: stream, the session's set of journaled run ids. ARGV: run id, write token, then
 * sequence and text of each record. Returns { 1 } when appended (or already appended),
 * { 0, last sequence } when refused.
 */
export const appendJournalScript: ScriptDefinition = {
  name: 'keepsakeAppendJournal',
  lua: `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local last_sequence = 0
if #last > 0 then
  local id = last[1][1]
  last_sequence = tonumber(string.sub(id, 1, string.find(id, '-', 1, true) - 1))
  local fields = last[1][2]
  for index = 1, #fields, 2 do
    if fields[index] == 'w' and fields[index + 1] == ARGV[2] then return { 1 } end
  end
end
local count = (#ARGV - 2) / 2
for index = 0, count - 1 do
  if tonumber(ARGV[3 + index * 2]) ~= last_sequence + 1 + index then
    return { 0, last_sequence }
  end
end
for index = 0, count - 1 do
  local id = ARGV[3 + index * 2] .. '-0'
  if index == count - 1 then
    redis.call('XADD', KEYS[1], id, 't', ARGV[4 + index * 2], 'w', ARGV[2])
  else
    redis.call('XADD', KEYS[1], id, 't', ARGV[4 + index * 2])
  end
end
redis.call('SADD', KEYS[2], ARGV[1])
return { 1 }
`,
};

/**
 * Reads records after a sequence. KEYS: stream. ARGV: after sequence, limit. Returns false
 * when the journal does not exist, else the XRANGE entries.
 */
export const readJournalScript: ScriptDefinition = {
  name: 'keepsakeReadJournal',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('XRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '+', 'COUNT', tonumber(ARGV[2]))
`,
};

/**
 * B8: removes every journal of a session. KEYS: the session's set of run ids. ARGV: the
 * prefix of its journal keys. The stream keys are named here rather than declared, since
 * the set says which exist; they share the session's hash tag, so on Cluster they live on
 * the slot this script runs on.
 */
export const deleteJournalsScript: ScriptDefinition = {
  name: 'keepsakeDeleteJournals',
  lua: `
for _, run_id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  redis.call('DEL', ARGV[1] .. run_id)
end
redis.call('DEL', KEYS[1])
return 1
`,
};

/** B8: removes one run's journal. KEYS: stream, the session's set of run ids. ARGV: run id. */
export const deleteJournalScript: ScriptDefinition = {
  name: 'keepsakeDeleteJournal',
  lua: `
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
`,
};
