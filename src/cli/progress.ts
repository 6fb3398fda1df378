// Terminal progress: a redrawn bar on a TTY, sparse plain lines otherwise (logs stay readable).

import { stderrColumns, stderrIsTerminal } from './quiet-native.js';

export interface Progress {
  update(done: number, total: number, label: string): void;
  finish(message: string): void;
}

export function progress(stream: NodeJS.WriteStream = process.stderr, title = ''): Progress {
  const tty = stderrIsTerminal(stream);
  const columns = stderrColumns(stream);
  let lastPlain = -1;
  return {
    update(done, total, label) {
      if (tty) {
        const width = 24;
        const filled = Math.round((done / Math.max(1, total)) * width);
        // The bar shows the fraction; the count, the whole steps done (a running phase's share is in the bar).
        const line = `${title}[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${Math.floor(done)}/${total} ${label}`;
        stream.write(`\r${line.slice(0, columns - 1).padEnd(Math.min(columns, 100) - 1)}`);
      } else {
        const decile = Math.floor((done / Math.max(1, total)) * 10);
        if (decile !== lastPlain || done === total) {
          lastPlain = decile;
          stream.write(`${title}${done}/${total} ${label}\n`);
        }
      }
    },
    finish(message) {
      if (tty) stream.write('\r\x1b[2K');
      stream.write(`${message}\n`);
    },
  };
}
