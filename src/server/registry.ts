// Routes are declared once with their zod schemas: the same declaration mounts the handler
// on the Koa router and feeds `GET /api/openapi.json` (z.toJSONSchema), so the document
// cannot drift from what the handlers validate.

import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { SKYSTACK_VERSION } from '../version.js';

export type Method = 'get' | 'post' | 'patch' | 'delete';

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
}

export class ApiRegistry {
  readonly docs: RouteDoc[] = [];

  constructor(private readonly router: Router) {}

  add(doc: RouteDoc, handler: (ctx: Context) => Promise<void>): void {
    this.docs.push(doc);
    this.router[doc.method](doc.path, async (ctx) => {
      await handler(ctx as unknown as Context);
    });
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

/** Paging query shared by the lists. */
export const PageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});

export function page<T>(items: T[], q: { limit: number; offset: number }): { items: T[]; total: number; limit: number; offset: number } {
  return { items: items.slice(q.offset, q.offset + q.limit), total: items.length, limit: q.limit, offset: q.offset };
}
