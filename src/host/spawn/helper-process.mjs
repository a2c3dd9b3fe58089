// The spawn helper: a small Node process that runs host commands for svcd and sends back their results.
//
// Why: starting a process forks the caller first, and forking svcd (hundreds of MiB of PGlite memory
// to copy page tables for) costs ~40 ms of its main thread per command; forking this helper costs ~2 ms.
// Plain JavaScript so it starts without the TypeScript loader. Protocol (advanced IPC serialization):
//   parent → helper  {type:'run', id, file, args, timeoutMs, input?, env?}  |  {type:'cancel', id}
//   helper → parent  {type:'result', id, failed, stdout, stderr, exitCode?, timedOut, isCanceled, shortMessage?}
// The helper exits when svcd goes away (the IPC channel closes).
import { execa } from 'execa';

const running = new Map();

process.on('message', async (msg) => {
  if (msg?.type === 'cancel') return running.get(msg.id)?.abort();
  if (msg?.type !== 'run') return;
  const abort = new AbortController();
  running.set(msg.id, abort);
  try {
    const res = await execa(msg.file, msg.args, {
      reject: false,
      timeout: msg.timeoutMs,
      cancelSignal: abort.signal,
      input: msg.input,
      env: msg.env,
      stripFinalNewline: true,
    });
    send({ type: 'result', id: msg.id, failed: res.failed, stdout: String(res.stdout ?? ''), stderr: String(res.stderr ?? ''), exitCode: res.exitCode, timedOut: !!res.timedOut, isCanceled: !!res.isCanceled, shortMessage: res.shortMessage });
  } catch (e) {
    send({ type: 'result', id: msg.id, failed: true, stdout: '', stderr: '', timedOut: false, isCanceled: false, shortMessage: e instanceof Error ? e.message : String(e) });
  } finally {
    running.delete(msg.id);
  }
});

function send(m) {
  if (process.connected) process.send(m);
}

// svcd went away or stopped the helper: end the commands in flight with it.
const quit = () => {
  for (const a of running.values()) a.abort();
  setTimeout(() => process.exit(0), 100).unref();
  if (running.size === 0) process.exit(0);
};
process.on('disconnect', quit);
process.on('SIGTERM', quit);
