// Terminal progress: a redrawn bar on a TTY, sparse plain lines otherwise (logs stay readable).

export interface Progress {
  update(done: number, total: number, label: string): void;
  finish(message: string): void;
}

export function progress(stream: NodeJS.WriteStream = process.stderr, title = ''): Progress {
  const tty = Boolean(stream.isTTY);
  let lastPlain = -1;
  return {
    update(done, total, label) {
      if (tty) {
        const width = 24;
        const filled = Math.round((done / Math.max(1, total)) * width);
        const line = `${title}[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total} ${label}`;
        stream.write(`\r${line.slice(0, (stream.columns ?? 100) - 1).padEnd(Math.min(stream.columns ?? 100, 100) - 1)}`);
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
