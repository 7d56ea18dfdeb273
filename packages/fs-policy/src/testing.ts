/**
 * The fault port, for tests of this package and of its consumers: a hook consulted before every syscall a
 * primitive makes. Not for production code — a hook left installed changes what every primitive does.
 *
 * A hook receives the request (`op`, `step`, `path` — the logical path, never a `/proc` alias — and the raw
 * `args`). Throw to fail the step; return `{ result }` to replace the syscall's result without performing it;
 * return undefined to let it run.
 */
export { setFaultHook, type FaultHook, type OpName, type Req } from './internal/io.js';
