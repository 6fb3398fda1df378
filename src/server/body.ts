// Request bodies with a hard size limit (JSON and YAML up to 1 MiB, docs/threat-model.md). The limit is
// checked against Content-Length before reading and against the bytes actually received
// while reading, so a lying or chunked client cannot make the server buffer more, and must
// arrive by a deadline (a stalled body is answered 408 and its connection closed). Nesting is
// bounded before parsing (MAX_NESTING levels, JSON and YAML alike): recursive parsers,
// validators and the parameter merge never see a deeper document.

import type { Context, Next } from 'koa';
import type { z } from 'zod';
import { jsonDepth, MAX_NESTING, yamlDepth } from '../config/nesting.js';
import { ApiError, validationError } from './errors.js';

export const BODY_LIMIT = 1024 * 1024;
/** Time a client has to deliver its request (headers and body), by default. */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Sets the time by which the request body must have arrived (counted from now, as the request
 * enters the app); readBody answers 408 REQUEST_TIMEOUT after it and closes the connection.
 */
export function bodyDeadline(ms: number) {
  return async function setBodyDeadline(ctx: Context, next: Next): Promise<void> {
    (ctx.state as { bodyDeadline?: number }).bodyDeadline = Date.now() + ms;
    await next();
  };
}

export async function readBody(ctx: Context, limit = BODY_LIMIT): Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || NaN);
  const tooLarge = () => new ApiError('PAYLOAD_TOO_LARGE', `request body larger than ${limit} bytes`, { limit });
  if (Number.isFinite(declared) && declared > limit) {
    ctx.req.resume(); // drain, so the connection can still carry the answer
    throw tooLarge();
  }
  const req = ctx.req;
  if (req.readableEnded) return Buffer.alloc(0);
  const deadline = (ctx.state as { bodyDeadline?: number }).bodyDeadline ?? Date.now() + REQUEST_TIMEOUT_MS;
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (fn: () => void) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      fn();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        done(() => {
          req.resume();
          reject(tooLarge());
        });
      } else chunks.push(chunk);
    };
    const onEnd = () => done(() => resolve(Buffer.concat(chunks)));
    const onError = (e: Error) => done(() => reject(new ApiError('BAD_REQUEST', `request body not received: ${e.message}`)));
    // A client that stops sending keeps no socket and no handler waiting: the answer closes it.
    const timer = setTimeout(
      () =>
        done(() => {
          ctx.set('Connection', 'close');
          reject(new ApiError('REQUEST_TIMEOUT', 'the request body did not arrive in time'));
        }),
      Math.max(0, deadline - Date.now()),
    );
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** A JSON body (empty body = `{}`), validated with `schema`. */
export async function jsonBody<S extends z.ZodType>(ctx: Context, schema: S): Promise<z.output<S>> {
  const type = ctx.get('content-type');
  const raw = await readBody(ctx);
  let value: unknown = {};
  if (raw.length > 0) {
    if (type && !/^application\/(.+\+)?json\b/i.test(type)) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `expected application/json, got ${type.split(';')[0]}`);
    const text = raw.toString('utf8');
    if (jsonDepth(text, MAX_NESTING) > MAX_NESTING) throw tooDeep('request body');
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new ApiError('MALFORMED_JSON', `request body is not valid JSON: ${(e as Error).message}`);
    }
  }
  const r = schema.safeParse(value);
  if (!r.success) throw validationError(r.error, 'request body');
  return r.data;
}

function tooDeep(what: string): ApiError {
  return new ApiError('NESTING_TOO_DEEP', `${what} nests deeper than ${MAX_NESTING} levels`, { limit: MAX_NESTING });
}

/** Refuses a YAML text nested deeper than MAX_NESTING (checked before any YAML parser runs). */
export function checkYamlNesting(text: string, what = 'YAML'): void {
  if (yamlDepth(text, MAX_NESTING) > MAX_NESTING) throw tooDeep(what);
}

/** Query parameters validated with `schema` (single values only; repeated keys are refused). */
export function queryOf<S extends z.ZodType>(ctx: Context, schema: S): z.output<S> {
  const q: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.query)) {
    if (k === 'access_token') continue;
    if (Array.isArray(v)) throw new ApiError('BAD_REQUEST', `query parameter "${k}" given more than once`);
    if (v !== undefined) q[k] = v;
  }
  const r = schema.safeParse(q);
  if (!r.success) throw validationError(r.error, 'query');
  return r.data;
}
