// Browser sign-in for a server that requires a token (docs/threat-model.md): the web UI posts the
// token once and gets the session cookie that security.ts's tokenGuard accepts, so its fetches,
// EventSource streams, image tiles and download links all work without putting the token in
// URLs. The routes are public (they are how a browser gets past the token) but change state, so
// the cross-site guard runs on both; a wrong token is the same 401 as anywhere else.

import { z } from 'zod';
import { jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import type { ApiRegistry } from '../registry.js';
import { sessionCookieName, sessionCookieOptions, sessionValue, tokensEqual } from '../security.js';

const SessionBody = z.strictObject({ token: z.string().min(1).max(1024).describe('the server token (`--token`, SKYSTACK_TOKEN, or the one printed at start)') });
const SessionAnswer = z.object({ signed_in: z.boolean(), token_required: z.boolean() });

export function authRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    { method: 'post', path: '/api/auth/session', tag: 'system', summary: 'browser sign-in: exchanges the token for an HttpOnly, SameSite=Strict session cookie', public: true, body: SessionBody, response: SessionAnswer, responses: { 200: 'signed in (or no token needed)', 401: 'UNAUTHORIZED: wrong token' } },
    async (ctx) => {
      const body = await jsonBody(ctx, SessionBody);
      if (app.token === null) {
        ctx.body = { signed_in: false, token_required: false };
        return;
      }
      if (!tokensEqual(body.token, app.token)) throw new ApiError('UNAUTHORIZED', 'a valid bearer token is required');
      ctx.cookies.set(sessionCookieName(app.endpoint.port), sessionValue(app.token), sessionCookieOptions());
      ctx.body = { signed_in: true, token_required: true };
    },
  );

  api.add(
    { method: 'delete', path: '/api/auth/session', tag: 'system', summary: 'browser sign-out: clears the session cookie', public: true, responses: { 204: 'signed out' } },
    async (ctx) => {
      ctx.cookies.set(sessionCookieName(app.endpoint.port), '', sessionCookieOptions(0));
      ctx.status = 204;
    },
  );
}
