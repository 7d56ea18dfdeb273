/** Why a tracer could not be configured. */
export type MoaTraceConfigCode = 'EUNSET_VAR' | 'EBAD_VAR' | 'EINVALID_OPTION';

/**
 * A configuration the tracer refuses at creation (never at record time): an unset variable in `traceDir`,
 * a malformed `${…}`, an unknown privacy filter, an empty home.
 */
export class MoaTraceConfigError extends Error {
  override readonly name = 'MoaTraceConfigError';
  readonly code: MoaTraceConfigCode;

  constructor(code: MoaTraceConfigCode, message: string) {
    super(message);
    this.code = code;
  }
}
