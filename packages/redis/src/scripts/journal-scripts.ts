import type { ScriptDefinition } from './script.js';

/**
 * E2: appends a batch of records to a run's stream as ONE entry, with the explicit id
 * `<last sequence of the batch>-0`, so the server itself refuses an id that is not above
 * the stored one. Fields: `f` the first sequence, `w` the write token, then each record's
 * sequence and text. The first sequence must be exactly one more than the last stored (1
 * for a new journal), and the batch consecutive: both checked before the one write. A
 * resent batch that already landed (its token is the last entry's) is answered as the
 * success it was, never written twice.
 *
 * KEYS: stream. ARGV: write token, then sequence and text of each record.
 * Returns { 1 } when appended (or already appended), { 0, last sequence } when refused.
 */
export const appendJournalScript: ScriptDefinition = {
  name: 'keepsakeAppendJournal',
  lua: `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', '1')
local last_sequence = 0
if #last > 0 then
  local id = last[1][1]
  last_sequence = tonumber(string.sub(id, 1, string.find(id, '-', 1, true) - 1))
  local fields = last[1][2]
  for index = 1, #fields, 2 do
    if fields[index] == 'w' and fields[index + 1] == ARGV[1] then return { 1 } end
  end
end
local count = (#ARGV - 1) / 2
for index = 0, count - 1 do
  if tonumber(ARGV[2 + index * 2]) ~= last_sequence + 1 + index then
    return { 0, last_sequence }
  end
end
local entry = { 'XADD', KEYS[1], ARGV[#ARGV - 1] .. '-0', 'f', ARGV[2], 'w', ARGV[1] }
for index = 2, #ARGV do entry[#entry + 1] = ARGV[index] end
redis.call(unpack(entry))
return { 1 }
`,
};

/**
 * Reads the entries holding records after a sequence. KEYS: stream. ARGV: after sequence,
 * most entries. Returns false when the journal does not exist, else the XRANGE entries.
 */
export const readJournalScript: ScriptDefinition = {
  name: 'keepsakeReadJournal',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('XRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '+', 'COUNT', ARGV[2])
`,
};

/**
 * The runs of a session that have a journal: the set of run ids, less those whose stream
 * does not exist (a run id is added before its first append, so a crash in between leaves
 * one without a journal). KEYS: the set. ARGV: the prefix of the session's journal keys;
 * the stream keys are named here rather than declared, and share the session's hash tag,
 * so on Cluster they live on the slot this script runs on.
 */
export const listJournalsScript: ScriptDefinition = {
  name: 'keepsakeListJournals',
  lua: `
local runs = {}
for _, run_id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. run_id) == 1 then runs[#runs + 1] = run_id end
end
return runs
`,
};

/**
 * B8: removes every journal of a session and the set naming them, with one DEL. KEYS: the
 * set. ARGV: the prefix of the session's journal keys (see listJournalsScript).
 */
export const deleteJournalsScript: ScriptDefinition = {
  name: 'keepsakeDeleteJournals',
  lua: `
local keys = { KEYS[1] }
for _, run_id in ipairs(redis.call('SMEMBERS', KEYS[1])) do keys[#keys + 1] = ARGV[1] .. run_id end
redis.call('DEL', unpack(keys))
return 1
`,
};
