// Where a run's event log ends (src/shared/event-end.ts), the rule the server's event stream and
// the browser's followers share: a run's log ends at its run_end, a resumed run's at the last
// resume_end, and a resume_start opens an ended log again.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LogEnd, logEnded } from '../../src/shared/event-end.js';

const session = (...types: string[]) => types.map((type) => ({ type }));
const FIRST = session('run_start', 'phase_start', 'phase_end', 'run_end');
const RESUME = session('resume_start', 'run_start', 'phase_start', 'phase_end', 'run_end', 'resume_end');

test('a run ends at its run_end, not before', () => {
  assert.is(logEnded(FIRST.slice(0, 3)), false);
  assert.is(logEnded(FIRST), true);
  assert.is(logEnded([]), false);
});

test('a resumed run: the first run_end ends the log until a resume_start reopens it; the resume’s run_end does not end it, its resume_end does', () => {
  const end = new LogEnd();
  const seen: boolean[] = [];
  for (const l of [...FIRST, ...RESUME]) {
    end.see(l);
    seen.push(end.ended);
  }
  assert.equal(seen, [false, false, false, true, false, false, false, false, false, true]);
  assert.is(logEnded([...FIRST, ...RESUME, ...RESUME]), true);
  assert.is(logEnded([...FIRST, ...RESUME, ...RESUME.slice(0, 5)]), false, 'a second resume still running');
});

test('a resume whose process died before its run_end is open (the server closes it with run_end and resume_end)', () => {
  assert.is(logEnded([...FIRST, ...session('resume_start', 'run_start', 'phase_start')]), false);
  assert.is(logEnded([...FIRST, ...session('resume_start', 'run_start', 'phase_start', 'phase_end', 'run_end', 'resume_end')]), true);
});

test.run();
