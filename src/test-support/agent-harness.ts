import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import WebSocket from 'ws';
import { createAgent, type Agent, type AgentOptions } from '../agent.ts';

/**
 * An in-process agent with its state in a temp dir, for component tests: on PGlite there, or on the
 * PostgreSQL database at `databaseUrl`.
 */
export async function startTestAgent(
  opts: AgentOptions = {},
  { databaseUrl }: { databaseUrl?: string | undefined } = {},
): Promise<Agent & { dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-c-'));
  const agent = await createAgent(
    { stateDir: dir, logLevel: 'info', nodeName: 'test-node', databaseUrl },
    { logDestination: new Writable({ write: (_c, _e, cb) => cb() }), ...opts },
  );
  return Object.assign(agent, {
    dir,
    async cleanup() {
      await agent.stop();
      await rm(dir, { recursive: true, force: true });
    },
  });
}

/** Minimal HTTP over the agent's unix socket. */
export async function call(
  agent: Agent,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const { request } = await import('../../integration/support/http.ts');
  const res = await request({ socketPath: agent.socketPath }, method, url, body);
  return { status: res.status, json: res.json };
}

/** Open a websocket on the agent's unix socket; resolves once open (rejects with the HTTP status on refusal). */
export function openSocket(agent: Agent, url: string, opts: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws+unix://${agent.socketPath}:${url}`, opts);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** Collect JSON messages from a websocket. */
export function collect(ws: WebSocket): any[] {
  const got: any[] = [];
  ws.on('message', (data) => got.push(JSON.parse(data.toString())));
  return got;
}
