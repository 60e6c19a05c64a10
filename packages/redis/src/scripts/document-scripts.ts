import { READ_TRAILER_LUA, type ScriptDefinition } from './script.js';

/**
 * The conditional write (B4): compares the stored revision with the expected one and, only
 * when they match, stores the full write (SET, which drops the deltas) or appends a delta
 * (APPEND). One write either way.
 *
 * KEYS: document. ARGV: kind ('full' | 'delta'), revision (16 digits), expected revision
 * (16 digits, or '' for none), write token (32 characters), the bytes to store.
 *
 * Returns { 1 } when written; { 1, 1 } when this very write (same revision and token) is
 * what is stored already, a resend of a write that landed, answered as the success it was;
 * { 0, current revision } when refused (-1: no document, -2: bytes not in this format,
 * which are never overwritten).
 */
export const writeDocumentScript: ScriptDefinition = {
  name: 'keepsakeWriteDocument',
  lua: `${READ_TRAILER_LUA}
local current, token, unreadable = read_trailer(KEYS[1])
if unreadable then return { 0, -2 } end
if current == ARGV[2] and token == ARGV[4] then return { 1, 1 } end
local function refused() return { 0, current and tonumber(current) or -1 } end
if ARGV[3] == '' then
  if current then return refused() end
elseif current ~= ARGV[3] then
  return refused()
end
if ARGV[1] == 'delta' then
  if not current then return refused() end
  redis.call('APPEND', KEYS[1], ARGV[5])
else
  redis.call('SET', KEYS[1], ARGV[5])
end
return { 1 }
`,
};

/**
 * Deletes a document, only at the expected revision when one is given. KEYS: document.
 * ARGV: expected revision (16 digits, or '' for any). Returns { 1 } or { 0, current }.
 */
export const deleteDocumentScript: ScriptDefinition = {
  name: 'keepsakeDeleteDocument',
  lua: `${READ_TRAILER_LUA}
if ARGV[1] ~= '' then
  local current, _, unreadable = read_trailer(KEYS[1])
  if unreadable then return { 0, -2 } end
  if current ~= ARGV[1] then return { 0, current and tonumber(current) or -1 } end
end
redis.call('DEL', KEYS[1])
return { 1 }
`,
};

/**
 * A2: moves a document's bytes aside, intact, with one RENAME to a key of the same slot.
 * KEYS: document, quarantine key. Returns 1 when there was a document to move.
 */
export const quarantineDocumentScript: ScriptDefinition = {
  name: 'keepsakeQuarantineDocument',
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
return 1
`,
};
