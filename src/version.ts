// Name and version of this build, read once from package.json (the single source).
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
export const SKYSTACK_NAME: string = pkg.name;
export const SKYSTACK_VERSION: string = pkg.version;
