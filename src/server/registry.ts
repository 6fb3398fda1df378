// Routes are declared once with their zod schemas: the same declaration mounts the handler
// on the Koa router and feeds `GET /api/openapi.json` (z.toJSONSchema), so the document
// cannot drift from what the handlers validate. The declaration also carries the route's
// guards: every route requires the token unless declared `public`, and every state-changing
// route (any method but GET, or GET declared `changesState`) refuses cross-site requests.
// The guards run as middleware of the route itself, so any path text the router maps to the
// route runs them (the router is strict and case-sensitive besides: see app.ts).

import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import { ApiError } from './errors.js';
import { SKYSTACK_VERSION } from '../version.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface RouteDoc {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Request body media type when not JSON (e.g. YAML text). */
  bodyType?: string;
  /** Status → description. */
  responses: Record<number, string>;
  response?: z.ZodType;
  /** A GET that changes server state (the grant): guarded like POST/PATCH/DELETE. */
  changesState?: boolean;
  /** Answered without the bearer token (health checks). */
  public?: boolean;
}

export interface RouteGuards {
  /** Refuses cross-site browser requests. */
  crossSite: Middleware;
  /** Requires the bearer token when one is configured. */
  token: Middleware;
}

export function changesState(doc: Pick<RouteDoc, 'method' | 'changesState'>): boolean {
  return doc.method !== 'get' || doc.changesState === true;
}

export class ApiRegistry {
  readonly docs: RouteDoc[] = [];

  constructor(
    private readonly router: Router,
    private readonly guards: RouteGuards,
  ) {}

  add(doc: RouteDoc, handler: (ctx: Context) => Promise<void>): void {
    this.docs.push(doc);
    const chain: Middleware[] = [];
    if (changesState(doc)) chain.push(this.guards.crossSite);
    if (!doc.public) chain.push(this.guards.token);
    chain.push(async function route(ctx) {
      await handler(ctx as unknown as Context);
    });
    this.router[doc.method](doc.path, ...(chain as Parameters<Router['get']>[1][]));
  }

  openapi(): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    const schema = (s: z.ZodType, io: 'input' | 'output') => z.toJSONSchema(s, { io, unrepresentable: 'any' });
    for (const d of this.docs) {
      const oaPath = d.path.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/\{\*([A-Za-z_]+)\}/g, '{$1}');
      const params: unknown[] = [...oaPath.matchAll(/\{([A-Za-z_]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
      if (d.query) {
        const js = schema(d.query, 'input') as { properties?: Record<string, unknown>; required?: string[] };
        for (const [name, s] of Object.entries(js.properties ?? {})) params.push({ name, in: 'query', required: js.required?.includes(name) ?? false, schema: s });
      }
      const op: Record<string, unknown> = {
        summary: d.summary,
        tags: [d.tag],
        ...(changesState(d) ? { 'x-changes-state': true } : {}),
        security: d.public ? [] : [{ bearer: [] }],
        ...(params.length ? { parameters: params } : {}),
        responses: Object.fromEntries(
          Object.entries(d.responses).map(([status, description]) => [
            status,
            {
              description,
              content: { 'application/json': { schema: Number(status) >= 400 ? { $ref: '#/components/schemas/ErrorEnvelope' } : d.response ? schema(d.response, 'output') : {} } },
            },
          ]),
        ),
      };
      if (d.body) op.requestBody = { required: false, content: { [d.bodyType ?? 'application/json']: { schema: schema(d.body, 'input') } } };
      (paths[oaPath] ??= {})[d.method] = op;
    }
    return {
      openapi: '3.1.0',
      info: { title: 'skystack API', version: SKYSTACK_VERSION, description: 'Astrophotography preprocessing backend (Raw Stack, PCC, files, jobs, runs).' },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'required when the server is bound to a non-loopback address' } },
        schemas: {
          ErrorEnvelope: {
            type: 'object',
            required: ['error'],
            properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } } } },
          },
        },
      },
      paths,
    };
  }
}

/**
 * After the routes: a known API path asked with another method answers 405 in the envelope
 * (router.allowedMethods would answer bare), behind the token like the routes themselves.
 */
export function methodNotAllowed(router: Router, token: Middleware) {
  return async function answerMethodNotAllowed(ctx: Context, next: () => Promise<unknown>): Promise<void> {
    await next();
    if (ctx.status !== 404 || ctx.body !== undefined || !ctx.path.startsWith('/api/')) return;
    const methods = [...new Set(router.stack.filter((l) => l.match(ctx.path)).flatMap((l) => l.methods))];
    if (methods.length === 0) return;
    await token(ctx as Parameters<Middleware>[0], async () => {
      ctx.set('Allow', methods.join(', '));
      throw new ApiError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${ctx.path}`, { allowed: methods });
    });
  };
}

/** Paging query shared by the lists. */
export const PageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

export function page<T>(items: T[], q: { limit: number; offset: number }): { items: T[]; total: number; limit: number; offset: number } {
  return { items: items.slice(q.offset, q.offset + q.limit), total: items.length, limit: q.limit, offset: q.offset };
}
