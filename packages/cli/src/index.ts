export { renderConversation, saveConversation, saveConversationSync } from './save.js';
export { SaveError, type SaveErrorCode, type SaveErrorInit } from './errors.js';
export { formatSaveFailure, formatSaveSuccess } from './messages.js';
export { CONTENT_SECURITY_POLICY } from './render/html.js';
export { defaultFileName } from './paths.js';
export type {
  ConversationHistory,
  ConversationSnapshot,
  SaveFormat,
  SaveInput,
  SaveOptions,
  SaveResult,
  SnapshotMessage,
} from './types.js';
