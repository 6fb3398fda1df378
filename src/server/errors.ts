// The one error envelope of the API (docs/ARCHITECTURE.md "API conventions"): every failure leaves the server as
// `{"error": {"code", "message", "details"?}}` with a status from a closed code table.
// Handlers throw ApiError; anything else becomes 500 INTERNAL with a generic message (the
// detail goes to the server log, never into a response body: no stack traces, no paths of
// files outside the allowed roots).

import type { Context, Next } from 'koa';
import type { z } from 'zod';

export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  MALFORMED_JSON: 400,
  NESTING_TOO_DEEP: 400,
  VALIDATION_ERROR: 400,
  RESUME_CONFIG_CONFLICT: 400,
  UNAUTHORIZED: 401,
  PATH_NOT_ALLOWED: 403,
  FORBIDDEN_HOST: 403,
  FORBIDDEN_ORIGIN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  RESUME_NOT_SUPPORTED: 409,
  RESUME_PHASE_NOT_FEASIBLE: 409,
  RUN_BUSY: 409,
  REVISIONS_NOT_SUPPORTED: 409,
  JOB_FINISHED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PATH_NOT_FOUND: 422,
  NOT_A_DIRECTORY: 422,
  NOT_A_FILE: 422,
  UNREADABLE_INPUT: 422,
  UNSUPPORTED_TYPE: 422,
  PIPELINE_UNAVAILABLE: 422,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

/** A zod failure as a 400 VALIDATION_ERROR naming each bad key (dotted path). */
export function validationError(error: z.ZodError, where: string): ApiError {
  const issues = error.issues.flatMap((issue) => {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((k) => ({ path: base ? `${base}.${k}` : k, code: 'unknown_key', message: `unknown key "${base ? `${base}.${k}` : k}"` }));
    }
    return [{ path: base, code: issue.code, message: issue.message }];
  });
  const summary = issues
    .slice(0, 5)
    .map((i) => `${i.path || '(root)'}: ${i.message}`)
    .join('; ');
  return new ApiError('VALIDATION_ERROR', `invalid ${where}: ${summary}`, { issues });
}

export function envelope(code: ErrorCode, message: string, details?: Record<string, unknown>): ErrorEnvelope {
  return { error: { code, message, ...(details ? { details } : {}) } };
}

export function sendError(ctx: Context, err: ApiError): void {
  ctx.status = err.status;
  ctx.type = 'application/json';
  ctx.body = envelope(err.code, err.message, err.details);
  if (err.code === 'UNAUTHORIZED') ctx.set('WWW-Authenticate', 'Bearer realm="skystack"');
}

/** Outermost middleware: converts every throw (and unmatched routes) into the envelope. */
export function errorMiddleware(log: (message: string) => void) {
  return async function answerErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
    } catch (e) {
      if (e instanceof ApiError) {
        sendError(ctx, e);
        return;
      }
      // Errors raised by Koa itself (e.g. ctx.throw, malformed URLs) carry a status.
      const status = (e as { status?: number }).status;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        sendError(ctx, new ApiError(status === 413 ? 'PAYLOAD_TOO_LARGE' : status === 404 ? 'NOT_FOUND' : 'BAD_REQUEST', (e as Error).message || 'bad request'));
        return;
      }
      log(`INTERNAL ${ctx.method} ${ctx.path}: ${(e as Error)?.stack ?? String(e)}`);
      sendError(ctx, new ApiError('INTERNAL', 'internal server error'));
    }
  };
}
