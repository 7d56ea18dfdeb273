/**
 * @hermes/trajectory — owner-only trajectory JSONL samples, kept out of git work trees, and the ShareGPT
 * conversion the Python agent writes them in. File modes are decided by @hermes/fs-policy (kind
 * `trajectories`); this package never chooses a mode.
 */
export {
  COMPLETED_FILENAME,
  FAILED_FILENAME,
  TRAJECTORIES_DIR,
  findGitWorkTree,
  resolveTrajectoryPath,
  saveTrajectory,
  saveTrajectorySync,
  trajectoryOptionsFromConfig,
  type SaveTrajectoryOptions,
  type SaveTrajectoryResult,
  type TrajectoryConfigSource,
  type TrajectoryPath,
  type TrajectoryPathOptions,
  type TrajectoryRecord,
} from './save.js';
export {
  flattenContent,
  scratchpadToThink,
  toShareGpt,
  toolCallingSystemPrompt,
  type ChatMessage,
  type ChatToolCall,
  type ContentPart,
  type MessageContent,
  type MultimodalToolResult,
  type ShareGptOptions,
  type ShareGptResult,
  type ShareGptTurn,
  type ToolDefinition,
  type ToolFunction,
} from './sharegpt.js';
export { pythonJson } from './pyjson.js';
