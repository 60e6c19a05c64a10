export {
  type LoadChatOptions,
  loadChat,
  type SaveChatOptions,
  saveChat,
} from './chat-store.js';
export { answerMessageIdOf, chatIdOfSession, sessionIdOfChat } from './ids.js';
export {
  type KeepsakeDataTypes,
  type KeepsakeMarkerData,
  type KeepsakeMarkerPart,
  keepsakeDataSchemas,
  MARKER_PART_TYPE,
} from './marker-part.js';
export { STORED_UI_FIELD, type StoredUIFields } from './stored-message.js';
export {
  createResumableStreamContext,
  type MakeStream,
  type MakeStreamContext,
  type ResumableStreamContext,
  type ResumableStreamContextOptions,
  type ResumableStreamOptions,
} from './stream-context.js';
