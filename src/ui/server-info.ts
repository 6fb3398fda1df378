// The header line of the pages that start runs ("skystack <version> · device <kind>", or why the
// server could not be asked), from GET /api/system/info: one rendering so the Raw Stack page and
// the run studio read the same.

import { api, errText, type JsonObject } from './api.js';
import { getPath } from './config-paths.js';

/** The line for an info answer; the device part is left out when the server names none. */
export function serverInfoText(info: unknown): string {
  const device = getPath(info, 'capabilities.device.kind');
  return `${String(getPath(info, 'name') ?? 'skystack')} ${String(getPath(info, 'version') ?? '')}${device ? ` · device ${String(device)}` : ''}`;
}

/** Asks the server and writes the line into `el`; the answer, null when the server did not give one. */
export async function showServerLine(el: HTMLElement): Promise<JsonObject | null> {
  try {
    const info = await api.info();
    el.textContent = serverInfoText(info);
    return info;
  } catch (e) {
    el.textContent = `server not reachable: ${errText(e)}`;
    return null;
  }
}
